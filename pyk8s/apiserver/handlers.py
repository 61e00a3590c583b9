"""The REST verbs on resources: get, list, create, update, patch, delete, deletecollection, and their
subresources (upstream: apiserver/pkg/endpoints/handlers). Watches are in `watch.py`.

A handler turns a request into a `RESTStore` call: it decodes the body, converts between the version the
client speaks and the storage version, applies patches to the current object, and encodes the answer in the
format the client accepted (JSON, YAML or a Table).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..api import errors, goyaml, schema
from ..api.errors import go_value
from ..api.managed_fields import default_manager
from ..api.meta import Object, json_copy
from ..api.patch import PatchError, json_patch, merge_patch, strategic_merge
from ..api.protobuf.schema import message_name_for
from ..api.resources import Resource, ResourceTable
from ..api.selectors import SelectorError, parse_field_selector, parse_label_selector
from ..api.types.codec import DecodeError
from ..api.types.type_decl import kind_type
from ..storage import Preconditions
from . import tables
from .admission import Chain
from .apply import apply_to, field_manager, read_config, validate_patch_options
from .conversion import ConversionError, convert, convert_field_selector
from .encoding import (
    body_object,
    decode,
    field_validation,
    read_body,
    respond,
    typed_body,
    typed_object,
    typed_patch_result,
)
from .negotiation import (
    APPLY_PATCH_YAML,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    Output,
    choose_output,
)
from .registry.admit import admit_create
from .registry.rest import Context, DeleteOptions, ListOptions, RESTStore
from .request_info import RequestInfo
from .subresources import Subresources, scale_of

_INT64 = re.compile(r"[+-]?[0-9]+", re.ASCII)
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"

# Upstream's bound on the operations of one JSON patch (handlers/patch.go maxJSONPatchOperations).
MAX_JSON_PATCH_OPERATIONS = 10000

# Resources whose DELETE answers with the deleted object rather than a Status (upstream ReturnDeletedObject).
RETURNS_DELETED_OBJECT = {("", "pods"), ("", "services"), ("", "persistentvolumes"), ("", "persistentvolumeclaims")}


def query_int(query: Any, name: str) -> int | None:
    """A query parameter read as upstream's parameter codec reads an int64 (strconv.ParseInt, with its errors)."""
    raw = query.get(name)
    if raw in (None, ""):
        return None
    if not _INT64.fullmatch(raw):
        raise errors.bad_request(f"strconv.ParseInt: parsing {errors.go_quote(raw)}: invalid syntax")
    value = int(raw) if len(raw) < 30 else 2**64  # (Python's int() refuses thousands of digits)
    if not -(2**63) <= value < 2**63:
        raise errors.bad_request(f"strconv.ParseInt: parsing {errors.go_quote(raw)}: value out of range")
    return value


def validate_field_manager(manager: str) -> list[errors.FieldError]:
    """Upstream's ValidateFieldManager: at most 128 bytes, every character printable."""
    problems = []
    if len(manager.encode()) > 128:
        problems.append(errors.too_long("fieldManager", 128))
    for i, ch in enumerate(manager):
        if not ch.isprintable() and ch != " ":
            problems.append(
                errors.invalid("fieldManager", manager, f"invalid character {_go_rune(ch)} (at position {i})")
            )
    return problems


def _go_rune(ch: str) -> str:
    """Go's %#U: U+0001, with the character itself when printable."""
    return f"U+{ord(ch):04X}" + (f" '{ch}'" if ch.isprintable() else "")


def dry_run(values: list[str]) -> bool:
    for v in values:
        if v != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: {errors.go_quote(v)}: supported values: "All"')
    return bool(values)


def list_options(query: Any, served: Resource | None = None) -> ListOptions:
    try:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
    except SelectorError as e:
        raise errors.bad_request(str(e)) from None
    if served is not None:
        fields = convert_field_selector(served, fields)
    return ListOptions(
        label_selector=labels,
        field_selector=fields,
        limit=query_int(query, "limit") or 0,
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        allow_bookmarks=query_bool(query, "allowWatchBookmarks") or False,
        send_initial_events=query_bool(query, "sendInitialEvents"),
    )


def query_bool(query: Any, name: str) -> bool | None:
    """A boolean query parameter as upstream converts it: absent is None; "false" (any case) and "0" are false;
    anything else, the empty string included, is true."""
    if name not in query:
        return None
    value = query.get(name, "")
    return not (value == "0" or value.lower() == "false")


class Resolved:
    """The resource a request addresses: as served (`served`) and as stored (`rest.resource`), and what the
    handlers do that depends on the kind's definition (its Go types and upstream schema for built-in kinds; a
    custom resource's CRD overrides these, see apiextensions.customresource_handler)."""

    def __init__(self, served: Resource, rest: RESTStore, info: RequestInfo) -> None:
        self.served = served
        self.rest = rest
        self.info = info

    @property
    def protobuf(self) -> bool:
        """Whether the kind has a protobuf form (not the kinds of apiextensions and kube-aggregator, whose
        messages are not in kubernetes/api, nor custom resources)."""
        return _has_protobuf(self.served.api_version, self.served.kind)

    def schema_node(self) -> schema.Node | None:
        """The served kind's schema: what merges strategic patches and applies."""
        s = self.served
        return schema.kind_node(s.group, s.version, s.kind)

    def patch_types(self) -> tuple[str, ...]:
        return PATCH_TYPES

    def typed_object(self, obj: Object, mode: str, duplicates: list[str]) -> tuple[Object, list[str]]:
        """A request body as it will be stored, and its warnings (encoding.typed_object)."""
        return typed_object(obj, self.served, mode, duplicates)

    def typed_patch_result(
        self, obj: Object, mode: str, shown: Callable[[], Any], changed: frozenset[str] | None = None
    ) -> tuple[Object, list[str]]:
        """A patched object as it will be stored, and its warnings (encoding.typed_patch_result)."""
        return typed_patch_result(obj, self.served, mode, shown, changed)

    def scale_of(self, obj: Object) -> Object:
        """The autoscaling/v1 Scale of a scalable object."""
        return scale_of(obj)

    def set_replicas(self, obj: Object, replicas: int) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas

    def replicas_field(self) -> tuple[str, ...]:
        """Where the Scale's spec.replicas lives in the object, as a FieldsV1 path."""
        return ("f:spec", "f:replicas")

    def table(
        self, objs: list[Object], *, include: str, version: str, list_meta: dict[str, Any], headers: bool = True
    ) -> dict[str, Any]:
        """The server-side Table of objects of the served kind."""
        s = self.served
        return tables.table(objs, s.group, s.kind, include=include, version=version, list_meta=list_meta,
                            headers=headers)  # fmt: skip

    async def ready_for_client(self, objs: list[Object]) -> None:
        """Do what `to_client` of these objects needs done asynchronously (a custom resource's conversion
        webhook); built-in conversions need nothing."""

    async def ready_for_storage(self, obj: Object) -> None:
        """Likewise for `to_storage`."""

    def to_client(self, obj: Object) -> Object:
        return convert(obj, self.rest.resource, self.served)

    def to_storage(self, obj: Object) -> Object:
        try:
            # RESTStore.typed puts what is stored into its stored form: no need to here.
            return convert(obj, self.served, self.rest.resource, typed=False)
        except (ConversionError, DecodeError) as e:
            raise errors.cannot_decode(self.served.kind, self.served.version, e) from None


@functools.cache
def _has_protobuf(api_version: str, kind: str) -> bool:
    return message_name_for(api_version, kind) is not None


# Only-created kinds whose REST object never calls validating admission (upstream selfsubjectrulesreview/rest.go).
_NO_VALIDATING_ADMISSION = frozenset({"SelfSubjectRulesReview"})

# A kind that is created and answered but never stored (TokenReview, SubjectAccessReview, SelfSubjectReview):
# given the body read into its Go type, the request, and who asks, the object to answer (its status filled in).
CreateOnly = Callable[[Object, RequestInfo, Context, web.Request], Awaitable[Object]]


class ResourceHandlers:
    def __init__(
        self,
        table: ResourceTable,
        stores: dict[tuple[str, str], RESTStore],
        custom: Callable[[RequestInfo], Resolved | None] | None = None,
    ) -> None:
        self.table = table
        self.stores = stores  # (storage group/version, plural) -> RESTStore
        self.custom = custom  # custom resources: what the CRDs serve (apiextensions), consulted second
        self.subresources = Subresources(self)
        # (group, plural) -> the handler of a kind that is only created (upstream: its registry's Create)
        self.create_only: dict[tuple[str, str], CreateOnly] = {}

    @property
    def admission(self) -> Chain | None:
        """The server's admission chain (every store shares it); None before any store exists."""
        for rest in self.stores.values():
            return rest.admission
        return None

    def store_for(self, served: Resource) -> RESTStore:
        stored = self.table.storage_resource(served)
        return self.stores[(stored.group_version, stored.plural)]

    def resolve(self, info: RequestInfo) -> Resolved:
        served = self.table.get(info.api_group, info.api_version, info.resource)
        custom = None
        if served is None and self.custom is not None:
            custom = self.custom(info)
            served = custom.served if custom is not None else None
        if served is None or (info.namespace and not served.namespaced):
            raise errors.path_not_found()
        if info.subresource:
            sub = served.subresource(info.subresource)
            if sub is None or len(info.parts) > 3:
                raise errors.path_not_found()
            verbs = sub.verbs
        else:
            if len(info.parts) > 2:
                raise errors.path_not_found()
            verbs = served.verbs
        if info.verb not in verbs and not (info.verb == "watch" and "watch" in served.verbs):
            raise errors.method_not_supported(served.plural, info.verb, served.group)
        if served.namespaced and not info.namespace and info.verb not in ("list", "watch", "deletecollection"):
            raise errors.path_not_found()
        single = info.verb in ("get", "update", "patch", "delete")
        if (single and not info.name) or (info.verb == "create" and info.name and not info.subresource):
            raise errors.method_not_supported(served.plural, info.verb, served.group)
        if custom is not None:
            return custom
        return Resolved(served, self.store_for(served), info)

    async def serve(self, request: web.Request, info: RequestInfo, ctx: Context) -> web.StreamResponse:
        if info.api_group == "" and info.resource == "bindings" and info.namespace and len(info.parts) == 1:
            # The `bindings` resource stores nothing: a Binding assigns the pod it names (upstream: BindingREST).
            if info.verb != "create":
                raise errors.method_not_supported("bindings", info.verb)
            return await self.subresources.binding(request, info, ctx)
        if info.subresource == "proxy" and info.api_group == "" and info.resource in ("pods", "nodes"):
            # A proxy path goes on past the subresource (pods/p/proxy/some/path), which resolve refuses.
            if info.verb not in ("create", "delete", "get", "patch", "update") or not info.name:
                raise errors.method_not_supported(info.resource + "/proxy", info.verb)
            return await self.subresources.proxy(request, info)
        create_only = self.create_only.get((info.api_group, info.resource)) if not info.subresource else None
        if create_only is not None:
            return await self._create_only(request, info, ctx, create_only)
        r = self.resolve(info)
        if info.subresource and info.subresource != "status":
            return await self.subresources.serve(request, r, ctx)
        verb = info.verb
        if verb == "get":
            return await self.get(request, r)
        if verb == "list":
            return await self.list_collection(request, r)
        if verb == "create":
            return await self.create(request, r, ctx)
        if verb == "update":
            return await self.update(request, r, ctx)
        if verb == "patch":
            return await self.patch(request, r, ctx)
        if verb == "delete":
            return await self.delete(request, r, ctx)
        if verb == "deletecollection":
            return await self.delete_collection(request, r, ctx)
        raise errors.method_not_supported(r.served.plural, verb, r.served.group)

    async def _create_only(
        self, request: web.Request, info: RequestInfo, ctx: Context, handle: CreateOnly
    ) -> web.Response:
        served = self.table.get(info.api_group, info.api_version, info.resource)
        if served is None or len(info.parts) > 1 or (info.namespace and not served.namespaced):
            raise errors.path_not_found()
        if served.namespaced and not info.namespace:
            raise errors.path_not_found()
        if info.verb != "create":
            raise errors.method_not_supported(served.plural, info.verb, served.group)
        raw, _ = decode(await read_body(request), request.headers.get("Content-Type"), kind=served.kind)
        type_name = kind_type(served.group, served.version, served.kind)
        assert type_name is not None, served
        obj = typed_body(raw, type_name, served.kind, served.version)
        obj["apiVersion"], obj["kind"] = served.api_version, served.kind
        c = self._context(request, ctx)
        chain = self.admission
        if chain is None:
            answer = await handle(obj, info, c, request)
        else:
            # Admitted as any create (upstream's create handler): the mutating phase now, the validating one
            # where the kind's handler asks for it, or, for a handler that does not, once it has answered (an
            # answer has no side effects); a SelfSubjectRulesReview has none (upstream's REST skips it).
            name = str((obj.get("metadata") or {}).get("name") or "")
            obj, validate = await admit_create(chain, served, "", info.namespace, name, obj, c)
            called: list[bool] = []
            before = json_copy(obj)

            async def create_validation(current: Object) -> None:
                called.append(True)
                await validate(current)

            answer = await handle(obj, info, dataclasses.replace(c, create_validation=create_validation), request)
            if not called and served.kind not in _NO_VALIDATING_ADMISSION:
                await validate(before)
        out = choose_output(request.headers.get("Accept"), protobuf=_has_protobuf(served.api_version, served.kind))
        return respond(answer, out, 201)

    # -- output ----------------------------------------------------------------------------------------

    def output(self, request: web.Request, r: Resolved) -> Output:
        return choose_output(request.headers.get("Accept"), protobuf=r.protobuf)

    async def object_response(
        self,
        request: web.Request,
        r: Resolved,
        obj: Object,
        status: int = 200,
        warnings: list[str] | None = None,
        out: Output | None = None,
        *,
        stored: bool = False,
    ) -> web.Response:
        """`stored`: `obj` is a version as storage holds it (a read's answer, not a write's)."""
        out = out or self.output(request, r)
        await r.ready_for_client([obj])
        client_obj = r.to_client(obj)
        if out.transform == "Table":
            include = tables.check_include_object(request.query.get("includeObject", ""))
            doc = r.table(
                [client_obj],
                include=include,
                version=out.version,
                list_meta={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            )
            return respond(doc, out, status, warnings)
        if out.transform == "PartialObjectMetadata":
            doc = {
                "kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{out.version}",
                "metadata": obj["metadata"],
            }
            return respond(doc, out, status, warnings, stored=stored)
        return respond(client_obj, out, status, warnings, stored=stored)

    # -- reads -----------------------------------------------------------------------------------------

    async def get(self, request: web.Request, r: Resolved) -> web.Response:
        obj = await r.rest.get(r.info.namespace, r.info.name, request.query.get("resourceVersion", ""))
        return await self.object_response(request, r, obj, stored=True)

    async def list_collection(self, request: web.Request, r: Resolved) -> web.Response:
        out = self.output(request, r)
        opts = list_options(request.query, r.served)
        try:
            res = await r.rest.list_objects(r.info.namespace, opts)
        except errors.StatusError as err:
            if err.code == 410 and opts.continue_token:
                raise await self._expired_continue(r, opts) from None
            raise
        list_meta: dict[str, Any] = {"resourceVersion": res.resource_version}
        if res.continue_token:
            list_meta["continue"] = res.continue_token
        if res.remaining_item_count is not None:
            list_meta["remainingItemCount"] = res.remaining_item_count
        await r.ready_for_client(res.items)
        items = [r.to_client(o) for o in res.items]
        if out.transform == "Table":
            include = tables.check_include_object(request.query.get("includeObject", ""))
            doc = r.table(items, include=include, version=out.version, list_meta=list_meta)
            return respond(doc, out)
        if out.transform in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            doc = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{out.version}",
                "metadata": list_meta,
                "items": [
                    {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": f"meta.k8s.io/{out.version}",
                        "metadata": o["metadata"],
                    }
                    for o in items
                ],
            }
            return respond(doc, out, stored=True)
        doc = {"kind": r.served.list_kind, "apiVersion": r.served.api_version, "metadata": list_meta, "items": items}
        return respond(doc, out, stored=True)

    async def _expired_continue(self, r: Resolved, opts: ListOptions) -> errors.StatusError:
        err = errors.expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a "
            "new list without the continue parameter, or use the continue token in this response to retrieve "
            "the remainder of the results. Continuing with the provided token results in an inconsistent list "
            "- objects that were created, modified, or deleted between the time the first chunk was returned "
            "and now may show up in the list."
        )
        err.list_meta["continue"] = await r.rest.inconsistent_continue(opts.continue_token, r.info.namespace)
        return err

    # -- writes ----------------------------------------------------------------------------------------

    async def _decode_object(self, request: web.Request, r: Resolved) -> tuple[Object, list[str]]:
        mode = field_validation(request.query)
        data = await read_body(request)
        raw, dups = decode(
            data, request.headers.get("Content-Type"), check_duplicates=mode == "Strict", kind=r.served.kind
        )
        obj = body_object(raw, r.served)
        return r.typed_object(obj, mode, dups)

    def _context(self, request: web.Request, ctx: Context) -> Context:
        sent = request.query.get("fieldManager", "")
        problems = validate_field_manager(sent)
        if problems:
            kind = {"POST": "CreateOptions", "PUT": "UpdateOptions"}.get(request.method, "PatchOptions")
            raise errors.invalid_object(kind, "", problems, "meta.k8s.io")
        manager = sent or default_manager(request.headers.get("User-Agent", ""))
        return Context(user=ctx.user, dry_run=dry_run(request.query.getall("dryRun", [])), field_manager=manager)

    async def create(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        c = self._context(request, ctx)
        obj, warnings = await self._decode_object(request, r)
        await r.ready_for_storage(obj)
        created = await r.rest.create(r.info.namespace, r.to_storage(obj), c)
        return await self.object_response(request, r, created, 201, warnings)

    async def update(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        c = self._context(request, ctx)
        obj, warnings = await self._decode_object(request, r)
        await r.ready_for_storage(obj)
        desired = r.to_storage(obj)

        async def updater(existing: Object | None) -> Object:
            return desired if existing is None else dict(desired)

        # As upstream's Cacher.GuaranteedUpdate: the first attempt starts from the watch cache's copy (no storage
        # read); a stale copy only costs a retry on the stored state.
        result, created = await r.rest.update(
            r.info.namespace, r.info.name, updater, c, subresource=r.info.subresource, from_watch_cache=True
        )
        return await self.object_response(request, r, result, 201 if created else 200, warnings)

    async def patch(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        c = self._context(request, ctx)
        mode = field_validation(request.query)
        content_type = (request.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if content_type not in r.patch_types():
            raise unsupported_patch_type(r.patch_types())
        force = validate_patch_options(request.query, content_type)
        data = await read_body(request)
        if content_type == APPLY_PATCH_YAML:
            return await self._apply(request, r, c, mode, data, force)
        apply = make_patcher(content_type, data, r)
        patch_doc = apply.patch
        warnings: list[str] = []
        # A merge or strategic patch of plain fields changes only the top-level fields it names (no directive
        # such as $retainKeys reaches the others); the rest is the stored object, in stored form already when
        # it is served in its storage version, and need not be read into the types again.
        changed: frozenset[str] | None = None
        if (
            content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH)
            and isinstance(patch_doc, dict)
            and r.served.group_version == r.rest.resource.group_version
            and not any(k.startswith("$") for k in patch_doc)
        ):
            changed = frozenset(patch_doc)

        async def updater(existing: Object | None) -> Object:
            if existing is None:
                raise r.rest.not_found(r.info.name)
            await r.ready_for_client([existing])
            patched = apply(r.to_client(existing))
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce an object")
            patched = body_object(patched, r.served)
            shown = (lambda: go_value(patch_doc)) if content_type == STRATEGIC_MERGE_PATCH else (lambda: patched)
            patched, warnings[:] = r.typed_patch_result(patched, mode, shown, changed)
            await r.ready_for_storage(patched)
            return r.to_storage(patched)

        result, _ = await r.rest.update(
            r.info.namespace, r.info.name, updater, c, subresource=r.info.subresource, from_watch_cache=True
        )
        return await self.object_response(request, r, result, 200, warnings)

    async def _apply(
        self, request: web.Request, r: Resolved, c: Context, mode: str, data: bytes, force: bool
    ) -> web.Response:
        """Server-side apply: the configuration merged into the live object (or a new one) by the field manager."""
        config = read_config(data)
        manager = field_manager(r.served, r.rest, r.info.subresource, r.schema_node())
        warnings: list[str] = []

        async def updater(existing: Object | None) -> Object:
            if existing is None and r.info.subresource:
                raise r.rest.not_found(r.info.name)
            if existing is not None:
                await r.ready_for_client([existing])
            current = r.to_client(existing) if existing is not None else None
            applied = apply_to(manager, current, json_copy(config), c.field_manager, force, r.served, r.info.name,
                               r.info.namespace)  # fmt: skip
            patched, warnings[:] = r.typed_patch_result(applied, mode, lambda: applied)
            await r.ready_for_storage(patched)
            return r.to_storage(patched)

        applied_ctx = Context(c.user, c.dry_run, c.field_manager, applied=True)
        result, created = await r.rest.update(
            r.info.namespace, r.info.name, updater, applied_ctx, subresource=r.info.subresource,
            force_allow_create=True, from_watch_cache=True,
        )  # fmt: skip
        return await self.object_response(request, r, result, 201 if created else 200, warnings)

    async def delete(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        opts = await delete_options(request)
        c = Context(ctx.user, opts.dry_run)
        obj, gone = await r.rest.delete(r.info.namespace, r.info.name, opts, c)
        status = 202 if not gone and opts.orphan_dependents is False else 200
        if gone and (r.served.group, r.rest.resource.plural) not in RETURNS_DELETED_OBJECT:
            md = obj["metadata"]
            group = {"group": r.served.group} if r.served.group else {}
            details = {"name": md.get("name", ""), **group, "kind": r.served.plural, "uid": md.get("uid", "")}
            doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
            return respond(doc, self.output(request, r), status)
        return await self.object_response(request, r, obj, status)

    async def delete_collection(self, request: web.Request, r: Resolved, ctx: Context) -> web.Response:
        opts = await delete_options(request)
        lopts = list_options(request.query, r.served)
        c = Context(ctx.user, opts.dry_run)
        deleted = await r.rest.delete_collection(r.info.namespace, lopts, opts, c)
        await r.ready_for_client(deleted)
        doc = {
            "kind": r.served.list_kind,
            "apiVersion": r.served.api_version,
            "metadata": {},
            "items": [r.to_client(o) for o in deleted],
        }
        return respond(doc, self.output(request, r))


async def delete_options(request: web.Request) -> DeleteOptions:
    """DeleteOptions from the body (kubectl sends one) and the query string."""
    body: dict[str, Any] = {}
    data = await read_body(request)
    if data.strip():
        raw, _ = decode(data, request.headers.get("Content-Type"), kind="DeleteOptions")
        body = typed_body(raw, DELETE_OPTIONS, "DeleteOptions")
    return delete_options_from(body, request.query)


def delete_options_from(body: dict[str, Any], q: Any) -> DeleteOptions:
    """DeleteOptions from a body already read into its type and the query string (an Eviction carries one)."""
    grace = body.get("gracePeriodSeconds")
    if q.get("gracePeriodSeconds"):
        grace = query_int(q, "gracePeriodSeconds")
    policy = q.get("propagationPolicy") or body.get("propagationPolicy")
    if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
        raise errors.invalid_object(
            "DeleteOptions", "", [errors.not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan"])],
            "meta.k8s.io",
        )  # fmt: skip
    orphan = body.get("orphanDependents")
    if q.get("orphanDependents"):
        orphan = q.get("orphanDependents", "").lower() == "true"
    if orphan is not None and policy is not None:
        raise errors.invalid_object(
            "DeleteOptions", "", [errors.invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set")],
            "meta.k8s.io",
        )  # fmt: skip
    pre = body.get("preconditions") or {}
    preconditions = None
    if pre.get("uid") is not None or pre.get("resourceVersion") is not None:
        preconditions = Preconditions(uid=pre.get("uid"), resource_version=pre.get("resourceVersion"))
    dry = list(q.getall("dryRun", [])) + list(body.get("dryRun") or [])
    if grace is not None and not isinstance(grace, int):
        raise errors.bad_request("gracePeriodSeconds must be an integer")
    return DeleteOptions(grace, preconditions, policy, orphan, dry_run(dry))


class Patcher:
    """Applies a patch body to the client's view of the current object; `patch` is the decoded body. The object
    handed over is the caller's to give up: the patch may be applied to it in place."""

    def __init__(self, patch: Any, apply: Callable[[Object], Any]) -> None:
        self.patch = patch
        self._apply = apply

    def __call__(self, obj: Object) -> Any:
        return self._apply(obj)


# The patch types served (upstream: application/apply-patch+cbor only behind the CBORServingAndStorage gate).
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML, STRATEGIC_MERGE_PATCH)


def unsupported_patch_type(accepted: tuple[str, ...] = PATCH_TYPES) -> errors.StatusError:
    return errors.unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted)
    )


def make_patcher(content_type: str, data: bytes, r: Resolved, *, scale: bool = False) -> Patcher:
    """A function that applies the patch body to the client's view of the current object (`scale`: to the
    object's Scale, a built-in kind whatever the object's)."""
    served = r.served
    accepted = PATCH_TYPES if scale else r.patch_types()
    if content_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH) or content_type not in accepted:
        raise unsupported_patch_type(accepted)
    patch, _ = decode(data, "application/json")
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        if len(patch) > MAX_JSON_PATCH_OPERATIONS:
            raise errors.request_entity_too_large(
                f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}"
            )

        def apply_json(obj: Object) -> Any:
            try:
                patched = json_patch(obj, patch)
            except PatchError as e:
                raise errors.invalid_object(
                    served.kind, obj["metadata"].get("name", ""), [errors.invalid("patch", "", str(e))], served.group
                ) from None
            # Operations can nest values inside each other: the result must still be an object we can keep.
            if goyaml.json_depth_exceeds(patched):
                raise errors.invalid_object(
                    served.kind, obj["metadata"].get("name", ""),
                    [errors.invalid("patch", "", goyaml.depth_message())], served.group,
                )  # fmt: skip
            return patched

        return Patcher(patch, apply_json)
    if not isinstance(patch, dict):
        raise errors.bad_request("the patch must be a JSON object")
    if content_type == MERGE_PATCH:
        # The updater hands over a copy of its own (RESTStore.update), so the patch goes straight into it.
        return Patcher(patch, lambda obj: merge_patch(obj, patch, in_place=True))
    node = schema.kind_node("autoscaling", "v1", "Scale") if scale else r.schema_node()

    def apply_strategic(obj: Object) -> Any:
        try:
            return strategic_merge(obj, patch, node)
        except PatchError as e:
            raise errors.bad_request(str(e)) from None

    return Patcher(patch, apply_strategic)
