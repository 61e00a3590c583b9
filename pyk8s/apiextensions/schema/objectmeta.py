"""TypeMeta and ObjectMeta of resources embedded in a custom resource (`x-kubernetes-embedded-resource`):
apiVersion and kind must be set and well-formed, metadata must decode as ObjectMeta and pass its usual
rules (upstream: apiextensions-apiserver pkg/apiserver/schema/objectmeta/{validation.go,coerce.go}).
"""

from __future__ import annotations

import functools
from typing import Any

from ...api import errors as e
from ...api import validation as v
from ...api.errors import FieldError
from ...api.types.codec import Decoder, decoder_for
from .pruning import Structural
from .values import INT64_MAX, INT64_MIN, go_json_float, shown

_STRING_FIELDS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
_INT_FIELDS = ("generation", "deletionGracePeriodSeconds")
_MAP_FIELDS = ("labels", "annotations")
_LIST_FIELDS = {
    "finalizers": "[]string",
    "ownerReferences": "[]v1.OwnerReference",
    "managedFields": "[]v1.ManagedFieldsEntry",
}
_TIME_FIELDS = ("creationTimestamp", "deletionTimestamp")


OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def object_meta_decoder() -> Decoder:
    """ObjectMeta's type decoder (api/types/codec), which a custom resource's metadata is read with; looked up
    once (decoder_for works out the type's name each time it is asked)."""
    return decoder_for(OBJECT_META)


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _json_kind(x: Any, number_literal: bool = False) -> str:
    """How encoding/json names a value it cannot unmarshal (`number 1.5` where the literal matters)."""
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int | float):
        if number_literal:
            return "number " + (go_json_float(x) if isinstance(x, float) else str(x))
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, list):
        return "array"
    return "object"


def _field_error(field: str, x: Any, go_type: str, number_literal: bool = False) -> str:
    kind = _json_kind(x, number_literal)
    return f"json: cannot unmarshal {kind} into Go struct field ObjectMeta.{field} of type {go_type}"


def object_meta_error(meta: Any) -> str | None:
    """The error decoding a JSON value as ObjectMeta gives, as encoding/json words it (the first mismatch,
    in field order), or None when it decodes."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_kind(meta)} into Go value of type v1.ObjectMeta"
    for k, x in meta.items():
        if x is None:
            continue
        if k in _STRING_FIELDS and not isinstance(x, str):
            return _field_error(k, x, "string")
        if k in _INT_FIELDS and (isinstance(x, bool) or not isinstance(x, int) or not INT64_MIN <= x <= INT64_MAX):
            return _field_error(k, x, "int64", number_literal=isinstance(x, int | float) and not isinstance(x, bool))
        if k in _MAP_FIELDS:
            if not isinstance(x, dict):
                return _field_error(k, x, "map[string]string")
            for item in x.values():
                if item is not None and not isinstance(item, str):
                    return _field_error(k, item, "string")
        if k in _LIST_FIELDS:
            if not isinstance(x, list):
                return _field_error(k, x, _LIST_FIELDS[k])
            if k == "finalizers":
                for item in x:
                    if item is not None and not isinstance(item, str):
                        return _field_error(k, item, "string")
        if k in _TIME_FIELDS and not isinstance(x, str):
            return f"json: cannot unmarshal {_json_kind(x)} into Go value of type string"
    return None


def _parse_group_version_error(api_version: str) -> str | None:
    if api_version.count("/") > 1 and api_version != "/":
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _validate_embedded(path: str, x: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if "apiVersion" not in x:
        errs.append(e.required(child(path, "apiVersion"), "must not be empty"))
    if "kind" not in x:
        errs.append(e.required(child(path, "kind"), "must not be empty"))
    for k, val in x.items():
        if k == "apiVersion":
            p = child(path, k)
            if not isinstance(val, str):
                errs.append(e.invalid(p, shown(val), "must be a string"))
            elif not val:
                errs.append(e.invalid(p, val, "must not be empty"))
            elif (msg := _parse_group_version_error(val)) is not None:
                errs.append(e.invalid(p, val, msg))
        elif k == "kind":
            p = child(path, k)
            if not isinstance(val, str):
                errs.append(e.invalid(p, shown(val), "must be a string"))
            elif not val:
                errs.append(e.invalid(p, val, "must not be empty"))
            elif problems := v.is_dns1035_label(val.lower()):
                errs.append(e.invalid(p, val, "may have mixed case, but should otherwise match: " + ",".join(problems)))
        elif k == "metadata":
            p = child(path, k)
            msg = object_meta_error(val)
            if msg is not None:
                errs.append(e.invalid(p, shown(val), msg))
                continue
            # imported here: the registry package imports the CRD strategy, which imports this module
            from ...apiserver.registry.strategy import validate_object_meta

            meta = dict(val or {})
            if not meta.get("name"):
                meta["name"] = "fakename"  # an embedded object may leave its name to whoever creates it
            errs += validate_object_meta(meta, bool(meta.get("namespace")), v.name_is_path_segment, p)
    return errs


def validate_embedded(path: str, x: Any, s: Structural | None, is_resource_root: bool) -> list[FieldError]:
    """Errors of every embedded resource in x (and of x itself with is_resource_root)."""
    if s is None:
        return []
    if is_resource_root:
        s = s.as_root()
    if not s.embedded_below:
        return []
    errs: list[FieldError] = []
    _walk(path, x, s, errs)
    return errs


def _walk(path: str, x: Any, s: Structural | None, errs: list[FieldError]) -> None:
    if s is None or not s.embedded_below:
        return
    if type(x) is dict:
        if s.embedded:
            errs += _validate_embedded(path, x)
        for k, val in x.items():
            p = s.properties.get(k)
            if p is not None:
                _walk(child(path, k), val, p, errs)
            elif s.has_additional:
                _walk(f"{path}[{k}]", val, s.additional, errs)
    elif type(x) is list:
        for i, val in enumerate(x):
            _walk(f"{path}[{i}]", val, s.items, errs)


def coerce_error(path: str, x: Any, s: Structural | None, is_resource_root: bool) -> FieldError | None:
    """The first type error in the TypeMeta or ObjectMeta of x's embedded resources, as upstream's Coerce
    reports it when it may not drop invalid fields."""
    if s is None:
        return None
    if is_resource_root:
        s = s.as_root()
    return _coerce(path, x, s) if s.embedded_below else None


def _coerce(path: str, x: Any, s: Structural | None) -> FieldError | None:
    if s is None or not s.embedded_below:
        return None
    if type(x) is dict:
        for k, val in x.items():
            if s.embedded:
                if k in ("apiVersion", "kind") and not isinstance(val, str):
                    return e.invalid(child(path, k), shown(val), "must be a string")
                if k == "metadata" and (msg := object_meta_error(val)) is not None:
                    return e.invalid(child(path, k), shown(val), msg)
            p = s.properties.get(k)
            if p is not None:
                err = _coerce(child(path, k), val, p)
            elif s.has_additional:
                err = _coerce(f"{path}[{k}]", val, s.additional)
            else:
                continue
            if err is not None:
                return err
    elif type(x) is list:
        for i, val in enumerate(x):
            err = _coerce(f"{path}[{i}]", val, s.items)
            if err is not None:
                return err
    return None
