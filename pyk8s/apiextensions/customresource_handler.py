"""Serving custom resources: what each established CustomResourceDefinition defines, installed as the CRD
appears and changes and removed when it goes (upstream: apiextensions-apiserver pkg/apiserver
customresource_handler.go, the crdHandler and its crdInfo).

For every served CRD this keeps one store (a watch cache over `/registry/<group>/<plural>/` and a `RESTStore`
at the storage version) and, per served version, the `Resource` clients address, its schema (validation,
pruning, defaulting, the apply schema), its printer columns and its scale paths. `CustomResolved` carries
them into the generic handlers (apiserver.handlers), which serve custom resources as they serve built-in
kinds but in JSON only, without strategic merge patches, and with the CRD's schema in place of upstream's
Go types.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api import errors, schema
from ..api.meta import Object, labels_of
from ..api.resources import SCALE, STANDARD_VERBS, STATUS, Resource, Subresource
from ..api.types.codec import unknown_paths
from ..apiserver.admission import Chain
from ..apiserver.encoding import typed_object, typed_patch_result
from ..apiserver.handlers import Resolved
from ..apiserver.negotiation import APPLY_PATCH_YAML, JSON_PATCH, MERGE_PATCH
from ..apiserver.registry.rest import Context, RESTStore
from ..apiserver.request_info import RequestInfo
from ..apiserver.tables import Printer, table
from ..storage import Store
from ..storage.cacher import Cacher
from . import apihelpers as h
from . import openapi_builder
from .conversion import ConverterSetupError, CRConverter, ServiceResolver, needs_conversion
from .crd_controller import watch_crds
from .customresource_strategy import CustomResourceStrategy, SelectableField
from .schema.cel_validation import rule_validator_for
from .schema.defaulting import prune_and_default
from .schema.objectmeta import object_meta_decoder
from .schema.validation import SchemaValidator
from .tableconvertor import printer_for_columns

log = logging.getLogger("pyk8s.apiextensions")

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML)  # no strategic merge: a CR has no patch strategies
TERMINATING_VERBS = ("delete", "deletecollection", "get", "list", "watch")
_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?", re.ASCII)


def version_order(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes' version order (v1 > v1beta2 > v1beta1 > v1alpha1 > other names A-Z)."""
    m = _VERSION.fullmatch(version)
    if m is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), "")


@dataclass
class VersionInfo:
    """A served version of a CRD."""

    resource: Resource
    schema: dict[str, Any]
    validator: SchemaValidator
    node: schema.Node  # the apply schema: the CRD's, with ObjectMeta for metadata
    printer: Printer
    scale: dict[str, str] | None  # specReplicasPath, statusReplicasPath, labelSelectorPath
    selectable: tuple[SelectableField, ...] = ()


@dataclass
class CRDInfo:
    """What one CRD serves: its versions and the store of its objects."""

    crd: Object
    storage: Resource
    versions: dict[str, VersionInfo]
    rest: RESTStore
    cacher: Cacher
    terminating: bool = False
    spec: Any = field(default=None)  # the spec it was built from, to tell when to rebuild
    # The strategy the watch cache reads selectable fields through: replaced when the CRD changes.
    strategy: list[CustomResourceStrategy] = field(default_factory=list)
    # The CRD's conversion webhook, when its strategy is Webhook (None: versions differ only in apiVersion).
    converter: CRConverter | None = None


def _apply_schema(openapi: dict[str, Any]) -> dict[str, Any]:
    """The CRD's schema as server-side apply reads it: apiVersion and kind strings, metadata an ObjectMeta."""
    props = dict(openapi.get("properties") or {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"$ref": "#/$defs/" + OBJECT_META}
    return {**openapi, "type": "object", "properties": props}


def _path_parts(path: str) -> list[str]:
    """A simple JSON path of a scale subresource (`.spec.replicas`) as field names."""
    return [p for p in path.split(".") if p]


def _nested(obj: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _selectable(fields: list[dict[str, Any]]) -> tuple[SelectableField, ...]:
    """A CRD version's selectableFields: the label (the path without its leading dot) and how to read it."""
    out: list[SelectableField] = []
    for f in fields:
        path = str(f.get("jsonPath", ""))
        parts = _path_parts(path)

        def value_of(obj: Object, parts: list[str] = parts) -> str:
            v = _nested(obj, parts)
            if v is None or isinstance(v, dict | list):
                return ""
            if isinstance(v, bool):
                return "true" if v else "false"
            return str(v)

        out.append((path.lstrip("."), value_of))
    return tuple(out)


def build_versions(crd: Object) -> tuple[Resource, dict[str, VersionInfo]]:
    """The storage resource and the served versions of a CRD, from its spec and accepted names."""
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
    group = spec.get("group", "")
    plural = names.get("plural", "")
    storage_version = h.storage_version(crd)
    terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    verbs = TERMINATING_VERBS if terminating else STANDARD_VERBS

    def resource(version: dict[str, Any]) -> Resource:
        subs = version.get("subresources") or {}
        sub: list[Subresource] = []
        if subs.get("scale") is not None:
            sub.append(SCALE)
        if subs.get("status") is not None:
            sub.append(STATUS)
        name = version.get("name", "")
        return Resource(
            group, name, names.get("kind", ""), plural, spec.get("scope") == "Namespaced",
            tuple(names.get("shortNames") or ()), tuple(names.get("categories") or ()), tuple(sub), verbs,
            storage_name=f"{group}/{plural}",
            storage_group_version=f"{group}/{storage_version}" if name != storage_version else "",
            singular=names.get("singular", ""), custom=True,
        )  # fmt: skip

    versions: dict[str, VersionInfo] = {}
    storage: Resource | None = None
    for v in sorted(h.versions(crd), key=lambda v: version_order(str(v.get("name", "")))):
        r = resource(v)
        if v.get("name") == storage_version:
            storage = r
        if not v.get("served"):
            continue
        openapi = (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
        subs = v.get("subresources") or {}
        versions[r.version] = VersionInfo(
            r, openapi, SchemaValidator(openapi), schema.Node.of(_apply_schema(openapi)),
            printer_for_columns(list(v.get("additionalPrinterColumns") or [])), subs.get("scale"),
            _selectable(list(v.get("selectableFields") or [])),
        )  # fmt: skip
    if storage is None:  # validation guarantees one; a broken stored CRD still gets a store
        storage = resource({"name": storage_version or "v1"})
    return storage, versions


class CustomResourceStore(RESTStore):
    """The REST store of a custom resource: its managedFields follow the CRD's schema."""

    def __init__(self, *args: Any, node: schema.Node, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node = node

    def schema_node(self) -> schema.Node | None:
        return self.node

    def zero_value(self) -> Any:
        """What a create is compared with: an empty object of the kind (upstream: a new Unstructured), so
        that every node the create adds is owned whole (`f:spec: {".": {}, ...}`)."""
        r = self.resource
        return {"apiVersion": r.api_version, "kind": r.kind, "metadata": {}}


class CustomResolved(Resolved):
    """A request for a custom resource, with what its CRD says about the served version."""

    protobuf = False  # type: ignore[assignment]

    def __init__(self, crd: CRDInfo, version: VersionInfo, info: RequestInfo) -> None:
        super().__init__(version.resource, crd.rest, info)
        self.crd = crd
        self.version = version
        # A webhook converts between versions: its answers for this request's objects, by the input's id (the
        # input is kept with its answer, so that the id stays its own).
        self.converter = crd.converter if version.resource.version != crd.storage.version else None
        self._converted: dict[int, tuple[Object, Object]] = {}

    # -- conversion: the CRD's webhook, or (strategy None) a rewrite of apiVersion -------------------------

    async def _convert(self, objs: list[Object], api_version: str) -> None:
        assert self.converter is not None
        todo = [o for o in objs if o.get("apiVersion") != api_version and id(o) not in self._converted]
        if todo:
            for o, c in zip(todo, await self.converter.convert(todo, api_version), strict=True):
                self._converted[id(o)] = (o, c)

    async def ready_for_client(self, objs: list[Object]) -> None:
        if self.converter is not None:
            await self._convert(objs, self.served.api_version)

    async def ready_for_storage(self, obj: Object) -> None:
        if self.converter is not None:
            await self._convert([obj], self.rest.resource.api_version)

    def _converted_to(self, obj: Object, api_version: str) -> Object:
        if self.converter is None or obj.get("apiVersion") == api_version:
            return _with_api_version(obj, api_version)
        found = self._converted.get(id(obj))
        if found is None or found[0] is not obj:
            raise errors.internal_error(f"{obj.get('apiVersion')} object not converted to {api_version}")
        return found[1]

    def to_client(self, obj: Object) -> Object:
        return self._converted_to(obj, self.served.api_version)

    def to_storage(self, obj: Object) -> Object:
        return self._converted_to(obj, self.rest.resource.api_version)

    # -- the schema in place of Go types ---------------------------------------------------------------

    def schema_node(self) -> schema.Node | None:
        return self.version.node

    def patch_types(self) -> tuple[str, ...]:
        return PATCH_TYPES

    def _coerce(self, obj: Object, mode: str) -> tuple[Object, list[str]]:
        """As upstream's schema-coercing decoder: metadata read as an ObjectMeta, fields the schema does not
        declare pruned (reported unless `mode` is Ignore), nulls of non-nullable fields dropped, defaults
        filled in. DecodeError when the metadata does not fit ObjectMeta."""
        unknown: list[Any] | None = None if mode == "Ignore" else []
        md = obj.get("metadata")
        problems: list[str] = []
        if md is not None:
            obj["metadata"] = object_meta_decoder().decode(md, unknown)
            problems += [f"metadata.{p}" for p in unknown_paths(unknown or [])]
        pruned = prune_and_default(obj, self.version.schema)  # prune, prune_non_nullable_nulls, default
        if mode == "Ignore":
            return obj, []
        return obj, [f"unknown field {errors.go_quote(p)}" for p in problems + pruned]

    def typed_object(self, obj: Object, mode: str, duplicates: list[str]) -> tuple[Object, list[str]]:
        return typed_object(obj, self.served, mode, duplicates, self._coerce_body)

    def typed_patch_result(
        self, obj: Object, mode: str, shown: Callable[[], Any], changed: frozenset[str] | None = None
    ) -> tuple[Object, list[str]]:
        return typed_patch_result(obj, self.served, mode, shown, changed, self._coerce_body)

    def _coerce_body(self, obj: Object, mode: str, changed: frozenset[str] | None) -> tuple[Object, list[str]]:
        return self._coerce(obj, mode)

    def table(
        self, objs: list[Object], *, include: str, version: str, list_meta: dict[str, Any], headers: bool = True
    ) -> dict[str, Any]:
        s = self.served
        return table(objs, s.group, s.kind, include=include, version=version, list_meta=list_meta, headers=headers,
                     printer=self.version.printer)  # fmt: skip

    # -- the scale subresource, at the CRD's paths -----------------------------------------------------

    def _scale_paths(self) -> tuple[list[str], list[str], list[str]]:
        sc = self.version.scale or {}
        return (_path_parts(sc.get("specReplicasPath", "")), _path_parts(sc.get("statusReplicasPath", "")),
                _path_parts(sc.get("labelSelectorPath", "") or ""))  # fmt: skip

    def scale_of(self, obj: Object) -> Object:
        spec_path, status_path, selector_path = self._scale_paths()
        md = obj["metadata"]
        spec_replicas = _nested(obj, spec_path)
        status_replicas = _nested(obj, status_path)
        status: dict[str, Any] = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
        selector = _nested(obj, selector_path) if selector_path else None
        if isinstance(selector, str) and selector:
            status["selector"] = selector
        meta = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": meta,
            "spec": {"replicas": spec_replicas} if isinstance(spec_replicas, int) and spec_replicas else {},
            "status": status,
        }

    def set_replicas(self, obj: Object, replicas: int) -> None:
        spec_path, _, _ = self._scale_paths()
        cur: Any = obj
        for p in spec_path[:-1]:
            nxt = cur.get(p)
            if not isinstance(nxt, dict):
                nxt = cur[p] = {}
            cur = nxt
        if spec_path:
            cur[spec_path[-1]] = replicas

    def replicas_field(self) -> tuple[str, ...]:
        return tuple("f:" + p for p in self._scale_paths()[0])


def _with_api_version(obj: Object, api_version: str) -> Object:
    if obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "apiVersion": api_version}


class CustomResourceHandler:
    """The custom resources every served CRD defines, kept in step with the CRDs by `run()`."""

    def __init__(
        self,
        crds: RESTStore,
        store: Store,
        admission: Chain,
        cacher_factory: Callable[[str, Callable[[Object], tuple[dict[str, str], dict[str, str]]]], Cacher],
        on_change: Callable[[], None],
        service_resolver: ServiceResolver | None = None,
    ) -> None:
        self.service_resolver = service_resolver  # where a conversion webhook's Service is reached
        self.crds = crds
        self.store = store
        self.admission = admission
        self.cacher_factory = cacher_factory
        self.on_change = on_change
        self.infos: dict[str, CRDInfo] = {}  # by CRD name
        self._served: dict[tuple[str, str, str], tuple[CRDInfo, VersionInfo]] = {}
        self._lock = asyncio.Lock()

    # -- lookups ---------------------------------------------------------------------------------------

    def resolve(self, info: RequestInfo) -> CustomResolved | None:
        found = self._served.get((info.api_group, info.api_version, info.resource))
        if found is None:
            return None
        crd, version = found
        if crd.terminating and info.verb == "create" and not info.subresource:
            raise errors.StatusError(
                405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating"
            )
        return CustomResolved(crd, version, info)

    def resources(self) -> list[Resource]:
        """Every served version of every served CRD, groups' preferred versions first (for discovery)."""
        out: list[Resource] = []
        for info in sorted(self.infos.values(), key=lambda i: i.storage.qualified_name):
            out += [v.resource for v in info.versions.values()]
        return out

    def openapi_definitions(self) -> tuple[dict[tuple[str, str, str], str], dict[str, Any]]:
        """The definition names and OpenAPI definitions of every served version (openapi_builder)."""
        names: dict[tuple[str, str, str], str] = {}
        defs: dict[str, Any] = {}
        for info in self.infos.values():
            n, d = openapi_builder.definitions(info.crd)
            names.update(n)
            defs.update(d)
        return names, defs

    def rest_of(self, crd_name: str) -> RESTStore | None:
        info = self.infos.get(crd_name)
        return info.rest if info is not None else None

    # -- keeping in step with the CRDs -----------------------------------------------------------------

    async def start(self) -> None:
        """Serve the CRDs stored now (before the server answers its first request)."""
        entries, _ = self.crds.cacher.list(self.crds.resource.collection_key(""))
        for en in entries:
            await self.sync(en.obj)
        self.on_change()

    async def run(self) -> None:
        async def handle(event_type: str, crd: Object) -> None:
            if event_type == "DELETED":
                await self.remove(crd["metadata"]["name"])
            else:
                await self.sync(crd)

        await watch_crds(self.crds, handle, "custom resource handler")

    async def sync(self, crd: Object) -> None:
        name = crd["metadata"]["name"]
        async with self._lock:
            if not h.is_served(crd):
                if name in self.infos and not (crd.get("metadata") or {}).get("deletionTimestamp"):
                    await self._uninstall(name)
                    self.on_change()
                return
            current = self.infos.get(name)
            terminating = bool(crd["metadata"].get("deletionTimestamp"))
            key = (crd.get("spec"), (crd.get("status") or {}).get("acceptedNames"), terminating)
            if (
                current is not None
                and current.spec == key
                and current.crd["metadata"].get("uid") == crd["metadata"].get("uid")
            ):
                current.crd = crd
                return
            try:
                await self._install(crd, key, current)
            except Exception:
                log.exception("custom resource handler: cannot serve %s", name)
                return
            self.on_change()

    async def remove(self, name: str) -> None:
        async with self._lock:
            if name in self.infos:
                await self._uninstall(name)
                self.on_change()

    async def _install(self, crd: Object, key: Any, current: CRDInfo | None) -> None:
        storage, versions = build_versions(crd)
        same_store = current is not None and current.storage.key_prefix == storage.key_prefix
        box: list[CustomResourceStrategy] = current.strategy if current is not None and same_store else []
        cacher = current.cacher if current is not None and same_store else None
        if current is not None and cacher is None:
            await self._uninstall(crd["metadata"]["name"])
        if cacher is None:

            def attrs(obj: Object) -> tuple[dict[str, str], dict[str, str]]:
                return labels_of(obj), box[0].fields(obj)

            cacher = self.cacher_factory(storage.key_prefix, attrs)
        storage_info = versions.get(storage.version)
        openapi = storage_info.schema if storage_info else _storage_schema(crd, storage.version)
        validator = storage_info.validator if storage_info else SchemaValidator(openapi)
        selectable = storage_info.selectable if storage_info else ()
        strategy = CustomResourceStrategy(storage, validator, selectable, rule_validator_for(openapi))
        box[:] = [strategy]
        if not cacher.ready:
            await cacher.start()
            await cacher.wait_ready(60)
        node = storage_info.node if storage_info else schema.Node.of(_apply_schema(openapi))
        rest = CustomResourceStore(storage, strategy, self.store, cacher, self.admission, node=node)
        terminating = bool(crd["metadata"].get("deletionTimestamp"))
        converter = current.converter if current is not None else None
        if converter is not None and not converter.up_to_date(crd):
            await converter.close()
            converter = None
        if converter is None and needs_conversion(crd):
            try:
                converter = CRConverter.for_crd(crd, service_resolver=self.service_resolver)
            except ConverterSetupError as e:
                log.warning("custom resource handler: %s: conversion webhook unusable: %s", crd["metadata"]["name"], e)
        info = CRDInfo(crd, storage, versions, rest, cacher, terminating, key, box, converter)
        name = crd["metadata"]["name"]
        self.infos[name] = info
        self._index()

    async def _uninstall(self, name: str) -> None:
        info = self.infos.pop(name, None)
        self._index()
        if info is not None:
            await info.cacher.stop()
            if info.converter is not None:
                await info.converter.close()

    def _index(self) -> None:
        self._served = {
            (v.resource.group, v.resource.version, v.resource.plural): (info, v)
            for info in self.infos.values()
            for v in info.versions.values()
        }

    async def stop(self) -> None:
        for name in list(self.infos):
            await self._uninstall(name)


def _storage_schema(crd: Object, version: str) -> dict[str, Any]:
    for v in h.versions(crd):
        if v.get("name") == version:
            return (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
    return {"type": "object"}


def system_context() -> Context:
    """Who the API server's own controllers write as."""
    from ..apiserver.authn import UserInfo
    from ..apiserver.certs import ADMIN_GROUP

    return Context(UserInfo("system:apiserver", groups=(ADMIN_GROUP,)), field_manager="kube-apiserver")
