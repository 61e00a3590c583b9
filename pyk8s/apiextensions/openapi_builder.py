"""A CRD's kinds as OpenAPI definitions, for `/openapi/v2` and `/openapi/v3` (upstream: apiextensions-apiserver
pkg/controller/openapi/builder): so that `kubectl explain` describes custom resources and kubectl's
validation finds their paths.

Each served version gives two definitions, named as upstream names them (the group reversed:
`com.example.stable.v1.CronTab` and `...CronTabList`): the version's schema with apiVersion, kind and an
ObjectMeta `metadata`, and the list kind. They are written in the JSON-schema form of pyk8s's built-in
definitions (`$ref` to `#/$defs/...`), which apiserver.openapi turns into either document's form.
"""

from __future__ import annotations

from typing import Any

from ..api.meta import Object
from . import apihelpers as h

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
API_VERSION_DESCRIPTION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
KIND_DESCRIPTION = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this from "
    "the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
OBJECT_META_DESCRIPTION = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
LIST_META_DESCRIPTION = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


def definition_name(group: str, version: str, kind: str) -> str:
    """Upstream's REST-friendly name: the group's labels reversed, then the version and the kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


def definitions(crd: Object) -> tuple[dict[tuple[str, str, str], str], dict[str, Any]]:
    """The definition names by (group, version, kind) and the definitions of a CRD's served versions."""
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or spec.get("names") or {}
    group, kind = spec.get("group", ""), names.get("kind", "")
    list_kind = names.get("listKind") or kind + "List"
    plural = names.get("plural", "")
    by_gvk: dict[tuple[str, str, str], str] = {}
    defs: dict[str, Any] = {}
    for v in h.versions(crd):
        if not v.get("served"):
            continue
        version = str(v.get("name", ""))
        schema = (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
        kind_name = definition_name(group, version, kind)
        list_name = definition_name(group, version, list_kind)
        by_gvk[(group, version, kind)] = kind_name
        by_gvk[(group, version, list_kind)] = list_name
        props = dict(schema.get("properties") or {})
        props["apiVersion"] = {"type": "string", "description": API_VERSION_DESCRIPTION}
        props["kind"] = {"type": "string", "description": KIND_DESCRIPTION}
        props["metadata"] = {"$ref": "#/$defs/" + META + "ObjectMeta", "description": OBJECT_META_DESCRIPTION}
        defs[kind_name] = {
            **{k: val for k, val in schema.items() if k != "x-kubernetes-validations"},
            "type": "object",
            "properties": dict(sorted(props.items())),
            "x-kubernetes-group-version-kind": [{"group": group, "kind": kind, "version": version}],
        }
        defs[list_name] = {
            "description": f"{list_kind} is a list of {kind}",
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
                "items": {
                    "type": "array",
                    "description": f"List of {plural}. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                    "items": {"$ref": "#/$defs/" + kind_name},
                },
                "kind": {"type": "string", "description": KIND_DESCRIPTION},
                "metadata": {"$ref": "#/$defs/" + META + "ListMeta", "description": LIST_META_DESCRIPTION},
            },
            "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind, "version": version}],
        }
    return by_gvk, defs
