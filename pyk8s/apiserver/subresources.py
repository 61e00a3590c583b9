"""Subresources other than `status`: `scale` (autoscaling/v1 Scale over a workload's replicas),
`pods/binding` and the `bindings` resource (assign a pod to a node), `pods/eviction` (a graceful delete),
`pods/ephemeralcontainers` (the pod, written through registry/pod_ephemeral_containers.py) and
`namespaces/finalize`, `certificatesigningrequests/approval` (registry/certificates.py), `serviceaccounts/token`
(the TokenRequest API, registry/serviceaccount_token.py)
(upstream: the registries' scale, binding, eviction, finalize and token REST objects);
`pods/log` (`pod_log`) and the streaming ones, exec, attach, portforward and proxy (`pod_connect`)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..api import errors
from ..api.field_manager import FieldManager
from ..api.meta import Object, json_copy, rfc3339, set_condition
from ..api.resources import Resource
from ..api.scale_handler import SCALE_API_VERSION, ScaleHandler
from ..api.schema import kind_node
from ..api.types.codec import decoder_for
from ..storage import Preconditions
from .apply import read_config, validate_patch_options
from .encoding import decode, read_body, respond, typed_body
from .eviction import evict
from .negotiation import APPLY_PATCH_YAML, Output, choose_output
from .registry.admit import CreateValidation, admit_connect, admit_create
from .registry.rest import Context
from .request_info import RequestInfo

_BINDING = "io.k8s.api.core.v1.Binding"
_EVICTION = "io.k8s.api.policy.v1.Eviction"
_TOKEN_REQUEST = "io.k8s.api.authentication.v1.TokenRequest"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"

if TYPE_CHECKING:
    from .handlers import Resolved, ResourceHandlers


def selector_string(obj: Object) -> str:
    """The label selector of a workload in its string form (upstream: metav1.FormatLabelSelector)."""
    sel = (obj.get("spec") or {}).get("selector")
    if not sel:
        return ""
    if obj.get("kind") == "ReplicationController" or ("matchLabels" not in sel and "matchExpressions" not in sel):
        return ",".join(f"{k}={v}" for k, v in sorted(sel.items()) if isinstance(v, str))
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append("!" + key)
    return ",".join(parts) or "<none>"


def scale_of(obj: Object) -> Object:
    md = obj["metadata"]
    meta = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
    spec_replicas = (obj.get("spec") or {}).get("replicas", 1)
    status: dict[str, Any] = {"replicas": (obj.get("status") or {}).get("replicas", 0)}
    sel = selector_string(obj)
    if sel:
        status["selector"] = sel
    scale = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    }
    typed: Object = decoder_for(_SCALE).decode(scale, None)  # as upstream writes it: replicas 0 is left out
    return typed


def _check_replicas(replicas: Any, name: str) -> None:
    """A Scale's spec.replicas: a whole number, at least 0."""
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid_object(
            "Scale", name, [errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            "autoscaling",
        )  # fmt: skip


class Subresources:
    def __init__(self, handlers: ResourceHandlers) -> None:
        self.handlers = handlers
        self.stopping = asyncio.Event()  # set when the server stops: open log streams end
        # serviceaccounts/token: (namespace, name, TokenRequest) -> the answered TokenRequest (set by the server,
        # registry/serviceaccount_token.py); None: not served
        # with validating admission to call (registry/admit.py)
        self.token_request: Callable[[str, str, Object, CreateValidation | None], Awaitable[Object]] | None = None

    async def serve(self, request: web.Request, r: Resolved, ctx: Context) -> web.StreamResponse:
        sub = r.info.subresource
        if sub == "scale":
            return await self.scale(request, r, ctx)
        if sub == "binding":
            return await self.binding(request, r.info, ctx)
        if sub == "eviction":
            return await self.eviction(request, r, ctx)
        if sub == "token" and self.token_request is not None:
            return await self.token(request, r, ctx)
        if sub in ("ephemeralcontainers", "approval"):
            # The object itself, of which a write changes only what the strategy lets the subresource change (a
            # pod's spec.ephemeralContainers, a CertificateSigningRequest's status.conditions).
            if r.info.verb == "get":
                return await self.handlers.get(request, r)
            if r.info.verb == "update":
                return await self.handlers.update(request, r, ctx)
            if r.info.verb == "patch":
                return await self.handlers.patch(request, r, ctx)
        if sub == "finalize" and r.info.verb == "update":
            return await self.handlers.update(request, r, ctx)
        if r.served.group == "" and r.served.plural == "pods" and sub in ("log", "exec", "attach", "portforward"):
            return await self.pod_stream(request, r)
        raise errors.method_not_supported(f"{r.served.plural}/{sub}", r.info.verb, r.served.group)

    async def get_node(self, name: str) -> Object:
        nodes = self.handlers.store_for(self.handlers.table.get("", "v1", "nodes"))  # type: ignore[arg-type]
        return await nodes.get("", name)

    async def pod_stream(self, request: web.Request, r: Resolved) -> web.StreamResponse:
        """`pods/log` streamed from the node's kubelet; exec, attach and portforward refused (simulated)."""
        from .pod_connect import connect
        from .pod_log import serve_log

        if r.info.subresource != "log":  # exec, attach, portforward: a CONNECT, admitted before any lookup
            await self.admit_connect(request, r.rest.resource, r.info)
        pod = await r.rest.get(r.info.namespace, r.info.name)
        if r.info.subresource == "log":
            return await serve_log(request, pod, self.get_node, self.stopping)
        return await connect(r.info.subresource, pod, request.query, self.get_node)  # type: ignore[no-any-return]

    async def admit_connect(self, request: web.Request, resource: Resource, info: RequestInfo) -> None:
        """A CONNECT's checks before it connects (upstream ConnectResource): no dry run, then admission with the
        connect options as the object."""
        from .pod_connect import connect_options, proxy_subpath

        if "dryRun" in request.query:
            raise errors.bad_request("dryRun is not supported")
        sub = info.subresource
        subpath = proxy_subpath(info.parts, request.path) if sub == "proxy" else None
        options = connect_options(resource.plural, sub, request.query, subpath)
        chain = self.handlers.admission
        if chain is not None:
            await admit_connect(chain, resource, sub, info.namespace, info.name, options, request["user"])

    async def proxy(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        """`pods/<name>/proxy[/path]` and `nodes/<name>/proxy[/path]`: nothing to proxy to on simulated nodes."""
        from .pod_connect import connect, node_proxy

        h = self.handlers
        resource = h.table.get("", "v1", info.resource)
        assert resource is not None
        await self.admit_connect(request, resource, info)
        if info.resource == "nodes":
            await self.get_node(info.name)
            raise node_proxy(info.name)
        pods = h.store_for(h.table.get("", "v1", "pods"))  # type: ignore[arg-type]
        pod = await pods.get(info.namespace, info.name)
        return await connect("proxy", pod, request.query, self.get_node)  # type: ignore[no-any-return]

    async def scale(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        h = self.handlers
        out = h.output(request, r)
        if r.info.verb == "get":
            obj = await r.rest.get(r.info.namespace, r.info.name, request.query.get("resourceVersion", ""))
            return respond(r.scale_of(obj), out)
        c = h._context(request, ctx)
        content_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if r.info.verb == "patch":
            from .handlers import PATCH_TYPES, unsupported_patch_type

            if content_type not in PATCH_TYPES:
                raise unsupported_patch_type()
            force = validate_patch_options(request.query, content_type)
        data = await read_body(request)
        if r.info.verb == "patch" and content_type == APPLY_PATCH_YAML:
            return await self._apply_scale(r, c, data, force, out)
        if r.info.verb == "update":
            raw, _ = decode(data, request.headers.get("Content-Type"), kind="Scale")
            raw = typed_body(raw, _SCALE, "Scale")

            def new_scale(current: Object) -> Object:
                return raw
        else:
            from .handlers import make_patcher

            apply = make_patcher(content_type, data, r, scale=True)

            def new_scale(current: Object) -> Object:
                patched = apply(current)
                if not isinstance(patched, dict):
                    raise errors.bad_request("the patch did not produce a Scale")
                return typed_body(patched, _SCALE, "Scale")

        async def updater(existing: Object | None) -> Object:
            if existing is None:
                raise r.rest.not_found(r.info.name)
            current = r.scale_of(existing)
            desired = new_scale(current)
            rv = (desired.get("metadata") or {}).get("resourceVersion")
            if rv and rv != existing["metadata"]["resourceVersion"]:
                raise r.rest.conflict(r.info.name)
            replicas = (desired.get("spec") or {}).get("replicas")
            _check_replicas(replicas, r.info.name)
            r.set_replicas(existing, replicas)
            return existing

        # The parent's managedFields record the write with subresource "scale", as upstream's ScaleHandler does.
        result, _ = await r.rest.update(r.info.namespace, r.info.name, updater, c, subresource="scale")
        return respond(r.scale_of(result), out)

    async def _apply_scale(self, r: Resolved, c: Context, data: bytes, force: bool, out: Output) -> web.Response:
        """Server-side apply of a Scale: its managers are the workload's owners of replicas (api/scale_handler)."""
        config = read_config(data)
        workload_version = r.rest.resource.api_version
        scale_manager = FieldManager(kind_node("autoscaling", "v1", "Scale"), SCALE_API_VERSION, "Scale", "scale",
                                     None, (("f:status",),))  # fmt: skip

        async def updater(existing: Object | None) -> Object:
            if existing is None:
                raise r.rest.not_found(r.info.name)
            handler = ScaleHandler(existing["metadata"].get("managedFields"), workload_version,
                                   {workload_version: r.replicas_field()})  # fmt: skip
            scale = r.scale_of(existing)
            entries = handler.to_subresource()
            if entries:
                scale["metadata"]["managedFields"] = entries
            applied = scale_manager.apply(scale, json_copy(config), c.field_manager, force)
            replicas = (applied.get("spec") or {}).get("replicas", 0)
            _check_replicas(replicas, r.info.name)
            r.set_replicas(existing, replicas)
            parent = handler.to_parent(applied["metadata"].get("managedFields"))
            if parent:
                existing["metadata"]["managedFields"] = parent
            else:
                existing["metadata"].pop("managedFields", None)
            return existing

        applied_ctx = dataclasses.replace(c, applied=True)
        result, _ = await r.rest.update(r.info.namespace, r.info.name, updater, applied_ctx, subresource="scale")
        return respond(r.scale_of(result), out)

    async def binding(self, request: web.Request, info: RequestInfo, ctx: Context) -> web.Response:
        """`pods/<name>/binding`, and the `bindings` resource (the pod named by the Binding's name)."""
        raw, _ = decode(await read_body(request), request.headers.get("Content-Type"), kind="Binding")
        binding = typed_body(raw, _BINDING, "Binding")
        name = (binding.get("metadata") or {}).get("name") or ""
        if info.subresource:
            if name and name != info.name:
                raise errors.bad_request("name in URL does not match name in Binding object")
            name = info.name
        elif not name:
            raise errors.bad_request("Name parameter required.")
        pods = self.handlers.store_for(self.handlers.table.get("", "v1", "pods"))  # type: ignore[arg-type]
        c = self.handlers._context(request, ctx)
        chain = self.handlers.admission
        validate = None
        if chain is not None:  # a create of the Binding: pods/binding, or the `bindings` resource
            resource = pods.resource if info.subresource else self.handlers.table.get("", "v1", "bindings")
            assert resource is not None
            binding, validate = await admit_create(chain, resource, info.subresource, info.namespace, name,
                                                   binding, c)  # fmt: skip
        return await bind_pod(pods, info.namespace, name, binding, c, validate)

    async def token(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        """`serviceaccounts/<name>/token`: a TokenRequest, admitted as a create of the subresource, answered with
        its token."""
        assert self.token_request is not None
        raw, _ = decode(await read_body(request), request.headers.get("Content-Type"), kind="TokenRequest")
        req = typed_body(raw, _TOKEN_REQUEST, "TokenRequest")
        req["apiVersion"], req["kind"] = "authentication.k8s.io/v1", "TokenRequest"
        chain = self.handlers.admission
        validate = None
        if chain is not None:
            c = self.handlers._context(request, ctx)
            req, validate = await admit_create(chain, r.rest.resource, "token", r.info.namespace, r.info.name, req, c)
        answer = await self.token_request(r.info.namespace, r.info.name, req, validate)
        from .handlers import _has_protobuf  # handlers imports this module

        out = choose_output(
            request.headers.get("Accept"), protobuf=_has_protobuf("authentication.k8s.io/v1", "TokenRequest")
        )
        return respond(answer, out, 201)

    async def eviction(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        raw, _ = decode(await read_body(request), request.headers.get("Content-Type"), kind="Eviction")
        raw = typed_body(raw, _EVICTION, "Eviction")
        name = (raw.get("metadata") or {}).get("name") or r.info.name
        if name != r.info.name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        from .handlers import delete_options_from  # handlers imports this module

        # The Eviction's own DeleteOptions (dry run, preconditions, propagation) with the query's, as upstream.
        opts = delete_options_from(raw.get("deleteOptions") or {}, request.query)
        c = self.handlers._context(request, ctx)
        if opts.dry_run and not c.dry_run:
            c = dataclasses.replace(c, dry_run=True)  # the store's writes follow the context's dry run
        chain = self.handlers.admission
        if chain is not None:
            # A create of the Eviction (both phases, as upstream's create handler and EvictionREST); the pod's
            # condition and deletion that follow are the eviction's own writes, not admitted again.
            raw, validate = await admit_create(chain, r.rest.resource, "eviction", r.info.namespace, r.info.name,
                                               raw, c)  # fmt: skip
            await validate(raw)
        pdbs = self.handlers.stores.get(("policy/v1", "poddisruptionbudgets"))
        if pdbs is None:
            await r.rest.delete(r.info.namespace, r.info.name, opts, c, admit=False)
        else:
            await evict(r.rest, pdbs, r.info.namespace, r.info.name, opts, c)
        return respond(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
            self.handlers.output(request, r),
            201,
        )


async def bind_pod(
    pods: Any, namespace: str, name: str, binding: Any, ctx: Context, validate: CreateValidation | None = None
) -> web.Response:
    """Assign a pod to the node a Binding (read into its type) names (upstream: the pod registry's BindingREST);
    `validate` is the Binding's validating admission, called once the Binding is found valid."""
    target = binding.get("target") or {}
    node = target.get("name", "")
    if not node:
        raise errors.invalid_object("Binding", name, [errors.required("target.name", "")])
    if target.get("kind") not in ("", None, "Node"):
        raise errors.invalid_object(
            "Binding", name, [errors.not_supported("target.kind", target["kind"], ["Node", "<empty>"])]
        )
    if validate is not None:
        await validate(binding)
    annotations = (binding.get("metadata") or {}).get("annotations") or {}

    async def assign(pod: Object | None) -> Object:
        if pod is None:
            raise pods.not_found(name)
        if pod["metadata"].get("deletionTimestamp"):
            raise pods.conflict(name, f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise pods.conflict(name, f"pod {name} is already assigned to node {errors.go_quote(spec['nodeName'])}")
        spec["nodeName"] = node
        if annotations:
            pod["metadata"].setdefault("annotations", {}).update(annotations)
        set_condition(
            pod, {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339()}
        )
        return pod

    # The binding writes spec and status together, which neither the main resource nor /status may do. The
    # Binding's uid and resourceVersion, when given, must still be the pod's (upstream: preconditions), so a
    # scheduler never binds a pod that was replaced under the same name.
    md = binding.get("metadata") or {}
    pre = None
    if md.get("uid") or md.get("resourceVersion"):
        pre = Preconditions(uid=md.get("uid") or None, resource_version=md.get("resourceVersion") or None)
    await pods.update(namespace, name, assign, ctx, subresource="binding", preconditions=pre, from_watch_cache=True,
                      admit=False)  # fmt: skip
    return respond(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, Output(), 201
    )
