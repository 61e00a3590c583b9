"""`pods/exec`, `pods/attach`, `pods/portforward`, `pods/proxy` and `nodes/proxy` (upstream:
pkg/registry/core/pod/rest/subresources.go, strategy.go `streamLocation` and `PortForwardLocation`,
pkg/registry/core/node/rest/proxy.go).

The checks upstream makes before it connects come first, with its messages: the pod exists, the container is
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
from ..kubelet.server import not_real
from .kubelet_client import connection_info
from .pod_log import validate_container

NodeGetter = Callable[[str], Awaitable[Object]]
_WHAT = {"exec": "exec", "attach": "attach", "portforward": "port-forward", "proxy": "proxying to a pod"}


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
