"""`/openapi/v3` and `/openapi/v2`, built from upstream's v1.32 definitions and the resource table.

kubectl needs them: `apply` (default validation) checks that a kind's PATCH operation takes the
`fieldValidation` parameter and then lets the server validate; `explain` walks the component schemas by
their `x-kubernetes-group-version-kind`; `apply` reads patch strategies and merge keys from them; `create -f` of a
List validates against /openapi/v2 in its protobuf form (openapi_v2_proto). The
definitions come in JSON-schema form (nullable type lists, `$defs`); they are turned back into OpenAPI form
here: single types, `#/components/schemas/...` (v3) or `#/definitions/...` (v2) references, int-or-string.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from ..api import schema
from ..api.resources import Resource, ResourceTable
from . import openapi_v2_proto

_DEFS_REF = "#/$defs/"


def _convert(node: Any, ref_prefix: str, refs: set[str], *, in_kind_props: bool = False) -> Any:
    if isinstance(node, list):
        return [_convert(x, ref_prefix, refs) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    if "$ref" in node:
        name = node["$ref"][len(_DEFS_REF) :] if node["$ref"].startswith(_DEFS_REF) else node["$ref"]
        refs.add(name)
        ref = {"$ref": ref_prefix + name}
        extras = {k: _convert(v, ref_prefix, refs) for k, v in node.items() if k != "$ref"}
        if not extras:
            return ref
        return {"allOf": [ref], **extras} if ref_prefix.startswith("#/components") else {**ref, **extras}
    one_of = node.get("oneOf")
    if isinstance(one_of, list):
        kinds = {
            t
            for o in one_of
            for t in (o.get("type") if isinstance(o.get("type"), list) else [o.get("type")])
            if t and t != "null"
        }
        base = {k: v for k, v in node.items() if k != "oneOf"}
        if "integer" in kinds and "string" in kinds:
            return {**base, "type": "string", "format": "int-or-string"}
        return {**base, "type": "string"}
    for k, v in node.items():
        if k == "type" and isinstance(v, list):
            types = [t for t in v if t != "null"]
            if types:
                out["type"] = types[0]
        elif k == "properties" and isinstance(v, dict):
            props = {}
            for pk, pv in v.items():
                pv = _convert(pv, ref_prefix, refs)
                if pk in ("apiVersion", "kind") and isinstance(pv, dict):
                    pv = {x: y for x, y in pv.items() if x != "enum"}
                props[pk] = pv
            out["properties"] = props
        else:
            out[k] = _convert(v, ref_prefix, refs)
    return out


def _closure(names: set[str], ref_prefix: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The definitions named and those they refer to; `extra`: definitions beyond upstream's (custom
    resources'), in the same form."""
    defs = {**schema.definitions(), **extra} if extra else schema.definitions()
    out: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out or name not in defs:
            continue
        refs: set[str] = set()
        out[name] = _convert(defs[name], ref_prefix, refs)
        todo.extend(refs - out.keys())
    return dict(sorted(out.items()))


_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_QUERY = {
    "dryRun": "When present, indicates that modifications should not be persisted.",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is making these changes.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
    "force": 'Force is going to "force" Apply requests. It must be unset for non-apply patch requests.',
    "labelSelector": "A selector to restrict the list of returned objects by their labels.",
    "fieldSelector": "A selector to restrict the list of returned objects by their fields.",
    "limit": "limit is a maximum number of responses to return for a list call.",
    "continue": "The continue option should be set when retrieving more results from the server.",
    "resourceVersion": "resourceVersion sets a constraint on what resource versions a request may be served from.",
    "resourceVersionMatch": "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    "watch": "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    "allowWatchBookmarks": 'allowWatchBookmarks requests watch events with type "BOOKMARK".',
    "timeoutSeconds": "Timeout for the list/watch call.",
    "gracePeriodSeconds": "The duration in seconds before the object should be deleted.",
    "propagationPolicy": "Whether and how garbage collection will be performed.",
    "pretty": "If 'true', then the output is pretty printed.",
}
_INT_PARAMS = {"limit", "timeoutSeconds", "gracePeriodSeconds"}
_BOOL_PARAMS = {"watch", "allowWatchBookmarks", "force"}


def _param(name: str, v3: bool, where: str = "query") -> dict[str, Any]:
    typ = "integer" if name in _INT_PARAMS else "boolean" if name in _BOOL_PARAMS else "string"
    p: dict[str, Any] = {"name": name, "in": where, "description": _QUERY.get(name, name)}
    if where == "path":
        p["required"] = True
    if v3:
        p["schema"] = {"type": typ, "uniqueItems": True}
    else:
        p["type"] = typ
        p["uniqueItems"] = True
    return p


def _ref(name: str, v3: bool) -> dict[str, Any]:
    return {"$ref": ("#/components/schemas/" if v3 else "#/definitions/") + name}


def _response(name: str, v3: bool, code: str = "200") -> dict[str, Any]:
    if v3:
        body = {"schema": _ref(name, v3)}
        return {code: {"description": "OK", "content": {"application/json": body, "application/yaml": body}}}
    return {code: {"description": "OK", "schema": _ref(name, v3)}}


def _op(
    r: Resource,
    action: str,
    op_id: str,
    params: list[str],
    response: str,
    v3: bool,
    *,
    body: str = "",
    codes: tuple[str, ...] = ("200",),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": f"{action} {r.kind}",
        "operationId": op_id,
        "parameters": [_param(p, v3) for p in params],
        "responses": {},
        "tags": [r.group_version.replace("/", "_").replace(".", "")],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
    }
    for c in codes:
        op["responses"].update(_response(response, v3, c))
    if body:
        patch_types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
        if r.custom:
            patch_types.remove("application/strategic-merge-patch+json")
        types = patch_types if action == "patch" else ["application/json", "application/yaml"]
        if v3:
            op["requestBody"] = {"content": {t: {"schema": _ref(body, v3)} for t in types}, "required": True}
        else:
            op["parameters"].append({"name": "body", "in": "body", "required": True, "schema": _ref(body, v3)})
            op["consumes"] = types
    return op


DefinitionName = Callable[[str, str, str], "str | None"]


def _paths(
    resources: list[Resource], v3: bool, definition_name: DefinitionName = schema.definition_name
) -> tuple[dict[str, Any], set[str]]:
    paths: dict[str, Any] = {}
    names: set[str] = {
        _META + "Status",
        _META + "DeleteOptions",
        _META + "Patch",
        _META + "WatchEvent",
        _META + "APIResourceList",
    }
    for r in resources:
        kind_def = definition_name(r.group, r.version, r.kind)
        list_def = definition_name(r.group, r.version, r.list_kind)
        if kind_def is None:
            continue
        names.add(kind_def)
        if list_def:
            names.add(list_def)
        base = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
        ns = "/namespaces/{namespace}" if r.namespaced else ""
        ident = r.kind + ("Namespaced" if r.namespaced else "")
        verb_id = r.group_version.replace("/", "").replace(".", "")
        collection: dict[str, Any] = {"parameters": [_param("pretty", v3)]}
        if r.namespaced:
            collection["parameters"].insert(0, _param("namespace", v3, "path"))
        item: dict[str, Any] = {"parameters": [_param("name", v3, "path"), *collection["parameters"]]}
        write = ["dryRun", "fieldManager", "fieldValidation"]
        if "list" in r.verbs and list_def:
            collection["get"] = _op(
                r,
                "list",
                f"list{verb_id}{ident}",
                [
                    "labelSelector",
                    "fieldSelector",
                    "limit",
                    "continue",
                    "resourceVersion",
                    "resourceVersionMatch",
                    "watch",
                    "allowWatchBookmarks",
                    "timeoutSeconds",
                ],
                list_def,
                v3,
            )
        if "create" in r.verbs:
            collection["post"] = _op(
                r, "post", f"create{verb_id}{ident}", write, kind_def, v3, body=kind_def, codes=("200", "201", "202")
            )
        if "deletecollection" in r.verbs:
            collection["delete"] = _op(
                r,
                "deletecollection",
                f"deletecollection{verb_id}{ident}",
                ["labelSelector", "fieldSelector", "gracePeriodSeconds", "propagationPolicy", "dryRun"],
                _META + "Status",
                v3,
            )
        if "get" in r.verbs:
            item["get"] = _op(r, "get", f"read{verb_id}{ident}", [], kind_def, v3)
        if "update" in r.verbs:
            item["put"] = _op(
                r, "put", f"replace{verb_id}{ident}", write, kind_def, v3, body=kind_def, codes=("200", "201")
            )
        if "patch" in r.verbs:
            item["patch"] = _op(
                r,
                "patch",
                f"patch{verb_id}{ident}",
                [*write, "force"],
                kind_def,
                v3,
                body=_META + "Patch",
                codes=("200", "201"),
            )
        if "delete" in r.verbs:
            item["delete"] = _op(
                r,
                "delete",
                f"delete{verb_id}{ident}",
                ["gracePeriodSeconds", "propagationPolicy", "dryRun"],
                _META + "Status",
                v3,
                codes=("200", "202"),
            )
        paths[f"{base}{ns}/{r.plural}"] = collection
        paths[f"{base}{ns}/{r.plural}/{{name}}"] = item
        for sub in r.subresources:
            if sub.name not in ("status", "scale"):
                continue
            sub_def = kind_def if sub.name == "status" else "io.k8s.api.autoscaling.v1.Scale"
            names.add(sub_def)
            sub_item: dict[str, Any] = {"parameters": item["parameters"]}
            sub_r = r if sub.name == "status" else Resource("autoscaling", "v1", "Scale", "scale", r.namespaced)
            sub_item["get"] = _op(sub_r, "get", f"read{verb_id}{ident}{sub.name.title()}", [], sub_def, v3)
            sub_item["put"] = _op(
                sub_r,
                "put",
                f"replace{verb_id}{ident}{sub.name.title()}",
                write,
                sub_def,
                v3,
                body=sub_def,
                codes=("200", "201"),
            )
            sub_item["patch"] = _op(
                sub_r,
                "patch",
                f"patch{verb_id}{ident}{sub.name.title()}",
                [*write, "force"],
                sub_def,
                v3,
                body=_META + "Patch",
                codes=("200", "201"),
            )
            paths[f"{base}{ns}/{r.plural}/{{name}}/{sub.name}"] = sub_item
    return paths, names


class OpenAPI:
    """The documents, built on first request and kept (they only change with the resource table: a new one is
    made when CRDs change). `custom_names` and `custom_definitions`: what the CRDs add (apiextensions
    .openapi_builder)."""

    def __init__(
        self,
        table: ResourceTable,
        custom_names: dict[tuple[str, str, str], str] | None = None,
        custom_definitions: dict[str, Any] | None = None,
    ) -> None:
        self.table = table
        self.custom_names = custom_names or {}
        self.custom_definitions = custom_definitions or {}

    def _definition_name(self, group: str, version: str, kind: str) -> str | None:
        return self.custom_names.get((group, version, kind)) or schema.definition_name(group, version, kind)

    def _group_versions(self) -> list[tuple[str, str]]:
        out = []
        for g in self.table.groups():
            for v in self.table.versions[g]:
                out.append((g, v))
        return out

    @staticmethod
    def _gv_path(group: str, version: str) -> str:
        return f"api/{version}" if not group else f"apis/{group}/{version}"

    @functools.cached_property
    def v3_documents(self) -> dict[str, bytes]:
        docs: dict[str, bytes] = {}
        for g, v in self._group_versions():
            paths, names = _paths(self.table.in_group_version(g, v), True, self._definition_name)
            doc = {
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": schema.KUBERNETES_VERSION},
                "paths": paths,
                "components": {"schemas": _closure(names, "#/components/schemas/", self.custom_definitions)},
            }
            docs[self._gv_path(g, v)] = orjson.dumps(doc)
        return docs

    @functools.cached_property
    def v3_index(self) -> bytes:
        paths = {}
        for path, body in self.v3_documents.items():
            digest = hashlib.sha512(body).hexdigest()[:128].upper()
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
        return orjson.dumps({"paths": paths})

    @functools.cached_property
    def v2_document(self) -> bytes:
        return orjson.dumps(self._v2)

    @functools.cached_property
    def v2_proto(self) -> bytes:
        """The same document as gnostic's openapi.v2.Document message (openapi_v2_proto)."""
        return openapi_v2_proto.document(self._v2)

    @functools.cached_property
    def v2_etag(self) -> str:
        """Upstream's ETag for both forms: the JSON document's SHA-512, in upper-case hex, quoted."""
        return '"' + hashlib.sha512(self.v2_document).hexdigest().upper() + '"'

    @functools.cached_property
    def _v2(self) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        names: set[str] = set()
        for g, v in self._group_versions():
            p, n = _paths(self.table.in_group_version(g, v), False, self._definition_name)
            paths.update(p)
            names |= n
        doc = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": schema.KUBERNETES_VERSION},
            "paths": paths,
            "definitions": _closure(names, "#/definitions/", self.custom_definitions),
        }
        return doc
