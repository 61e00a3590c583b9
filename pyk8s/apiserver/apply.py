"""Server-side apply requests (upstream: the applyPatcher of apiserver/pkg/endpoints/handlers/patch.go):
`PATCH` with `application/apply-patch+yaml`. The body is the manager's whole intent for the object; the
field manager (api/field_manager) merges it into the live object, or into an empty one when there is none
(an apply creates), and keeps managedFields. Also the checks of PatchOptions that tell apply from the
other patch types (`fieldManager` required, `force` only for apply).
"""

from __future__ import annotations

from typing import Any

from ..api import errors, goyaml
from ..api.field_manager import FieldManager
from ..api.meta import Object
from ..api.resources import Resource
from ..api.schema import Node
from .negotiation import APPLY_PATCH_YAML
from .registry.rest import RESTStore


def validate_patch_options(query: Any, content_type: str) -> bool:
    """Upstream's ValidatePatchOptions; returns `force`. 422 on PatchOptions for what it refuses."""
    force_raw = query.get("force")  # present: set (a bool as upstream's parameter codec reads one)
    problems: list[errors.FieldError] = []
    if content_type != APPLY_PATCH_YAML:
        if force_raw is not None:
            problems.append(errors.forbidden("force", "may not be specified for non-apply patch"))
    elif not query.get("fieldManager"):
        problems.append(errors.required("fieldManager", "is required for apply patch"))
    if problems:
        raise errors.invalid_object("PatchOptions", "", problems, "meta.k8s.io")
    return force_raw is not None and not (force_raw == "0" or force_raw.lower() == "false")


def read_config(data: bytes) -> Object:
    """The applied configuration: YAML or JSON (a JSON document is YAML)."""
    try:
        config = goyaml.load(data.decode("utf-8"))
    except (goyaml.YAMLDecodeError, UnicodeDecodeError) as e:
        raise errors.bad_request(f"error decoding YAML: error converting YAML to JSON: {e}") from None
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise errors.bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{_json_type(config)} into Go value of type map[string]interface {{}}"
        )
    return config


def _json_type(value: object) -> str:
    """What Go's JSON decoder calls a value it cannot put in a map."""
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


def field_manager(served: Resource, rest: RESTStore, subresource: str, node: Node | None) -> FieldManager:
    """The field manager of the endpoint: the store's own when the request speaks the storage version; `node`
    is the served kind's schema."""
    if served.group_version == rest.resource.group_version:
        return rest.field_manager(subresource)
    top_level = list((node.schema.get("properties") or {}) if node is not None else ())
    reset = rest.strategy.reset_fields(subresource, top_level)
    return FieldManager(node, served.api_version, served.kind, subresource, None, reset)


def apply_to(
    manager: FieldManager, current: Object | None, config: Object, field_manager_name: str, force: bool,
    served: Resource, name: str, namespace: str,
) -> Object:  # fmt: skip
    """The object after the apply (`current` None: the object does not exist and the apply creates it)."""
    md = config.get("metadata")
    if md is not None and not isinstance(md, dict):
        raise errors.bad_request("metadata must be an object")
    result = manager.apply(current, config, field_manager_name, force)
    result_md = result.setdefault("metadata", {})
    if current is None and result_md.get("uid"):
        raise errors.conflict(
            served.plural, name, f"uid mismatch: the provided object specified uid {result_md['uid']}, and no existing object was found", served.group
        )  # fmt: skip
    if served.namespaced:
        ns = result_md.get("namespace") or ""
        if ns and ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
    result["apiVersion"], result["kind"] = manager.api_version, manager.kind
    return result
