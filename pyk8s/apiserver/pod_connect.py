"""`pods/exec`, `pods/attach`, `pods/portforward`, `pods/proxy` and `nodes/proxy` (upstream:
pkg/registry/core/pod/rest/subresources.go, strategy.go `streamLocation` and `PortForwardLocation`,
pkg/registry/core/node/rest/proxy.go).

Admission runs first (upstream's ConnectResource): operation CONNECT, the connect options read from the query
(`connect_options`: PodExecOptions, PodAttachOptions, PodPortForwardOptions, PodProxyOptions, NodeProxyOptions)
as the object, before the pod is looked up; a dry run is refused. The checks upstream makes before it connects
come next, with its messages: the pod exists, the container is
valid, the pod has a node, the node has a kubelet address (loopback, see `kubelet_client`). Then, where a
kube-apiserver would upgrade the connection and splice it to the kubelet, the answer is a 400 BadRequest
saying the containers are simulated: there is no process to run a command in, attach to or forward a port
of. 400 rather than 405 or 501 because the request is well formed and the verb is served (discovery lists
it) but can never succeed for this pod, and because a 4xx that is not 401/403/404 makes kubectl's WebSocket
executor fall back to SPDY, whose failed upgrade prints the Status message as `Error from server
(BadRequest): ...`; 503 would invite retries that cannot help.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..api import errors
from ..api.meta import Object
from ..api.types.codec import decoder_for
from ..kubelet.server import not_real
from .kubelet_client import connection_info
from .pod_log import validate_container

NodeGetter = Callable[[str], Awaitable[Object]]
_WHAT = {"exec": "exec", "attach": "attach", "portforward": "port-forward", "proxy": "proxying to a pod"}

# The connect options of each subresource: (kind, its boolean, string, string-list and integer-list fields).
_OPTIONS: dict[tuple[str, str], tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    ("pods", "exec"): ("PodExecOptions", ("stdin", "stdout", "stderr", "tty"), ("container",), ("command",), ()),
    ("pods", "attach"): ("PodAttachOptions", ("stdin", "stdout", "stderr", "tty"), ("container",), (), ()),
    ("pods", "portforward"): ("PodPortForwardOptions", (), (), (), ("ports",)),
    ("pods", "proxy"): ("PodProxyOptions", (), ("path",), (), ()),
    ("nodes", "proxy"): ("NodeProxyOptions", (), ("path",), (), ()),
}


def _query_bool(values: list[str]) -> bool:
    """A boolean query parameter as upstream's url.Values conversion reads it: only "0" and "false" are false."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def connect_options(plural: str, subresource: str, query: Any, subpath: str | None = None) -> Object:
    """The connect options object of a request (upstream: the connecter's NewConnectOptions filled in by
    getRequestOptions); `subpath` is the path after `/proxy`, which a proxy's `path` takes. A malformed integer
    is a 400."""
    kind, bools, strings, string_lists, int_lists = _OPTIONS[(plural, subresource)]
    out: dict[str, Any] = {"kind": kind, "apiVersion": "v1"}
    for name in bools:
        out[name] = _query_bool(list(query.getall(name, [])))
    for name in strings:
        values = list(query.getall(name, []))
        out[name] = values[0] if values else ""
    for name in string_lists:
        out[name] = list(query.getall(name, []))
    for name in int_lists:
        try:
            out[name] = [int(v) for v in query.getall(name, [])]
        except ValueError as err:
            raise errors.bad_request(f"{name}: {err}") from None
    if subpath is not None:
        out["path"] = subpath
    typed: Object = decoder_for(f"io.k8s.api.core.v1.{kind}").decode(out, None)
    return typed


def proxy_subpath(parts: list[str], request_path: str) -> str:
    """The path after `<resource>/<name>/proxy`, with a leading slash and the request's trailing one (upstream
    getRequestOptions)."""
    p = "/".join(parts[3:])
    if p and not p.startswith("/"):
        p = "/" + p
    if request_path.endswith("/") and not p.endswith("/"):
        p += "/"
    return p


async def connect(subresource: str, pod: Object, query: Mapping[str, str], get_node: NodeGetter) -> Any:
    """Run upstream's checks for a streaming subresource of `pod`, then raise the simulated-container error."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    if subresource in ("exec", "attach"):
        validate_container(query.get("container", ""), pod)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    if subresource != "proxy":
        connection_info(await get_node(node_name))
    raise errors.bad_request(f"pod {name}: {not_real(_WHAT[subresource])}")


def node_proxy(name: str) -> errors.StatusError:
    """The answer for `nodes/<name>/proxy/...`: the simulated kubelet serves only container logs."""
    return errors.bad_request(f"node {name}: proxying to a simulated node's kubelet is not available")
