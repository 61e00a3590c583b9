"""Defaulting of custom resources from their CRD schema's `default` values, and the CRD-time check that
every default is itself valid, pruned and, inside metadata, valid ObjectMeta (upstream: apiextensions-apiserver
pkg/apiserver/schema/defaulting/{algorithm.go,validation.go}).
"""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import json_copy
from .objectmeta import coerce_error, validate_embedded
from .pruning import META_FIELDS, Structural, prune, structural
from .validation import SchemaValidator
from .values import deep_equal, shown


def _copy(value: Any) -> Any:
    return json_copy(value) if type(value) is dict or type(value) is list else value


def default(obj: Any, schema: Any) -> None:
    """Fill in, in place, the schema's defaults wherever a field is absent (or null and not nullable),
    top-down, in properties, additionalProperties values and list items alike. Defaults are deep-copied."""
    s = structural(schema) if schema is not None else None
    if s is not None and s.defaults_below:
        _default(obj, s)


def _default(x: Any, s: Structural) -> None:
    tx = type(x)
    if tx is dict:
        for k, p in s.defaulted:
            v = x.get(k, x)
            if v is x or (v is None and not p.nullable):
                x[k] = _copy(p.default)
        props, additional = s.properties, s.additional
        for k, v in x.items():
            p = props.get(k)
            if p is not None:
                if p.defaults_below and (type(v) is dict or type(v) is list):
                    _default(v, p)
            elif additional is not None and s.has_additional:
                if v is None and not additional.nullable and additional.has_default:
                    x[k] = v = _copy(additional.default)
                if additional.defaults_below and (type(v) is dict or type(v) is list):
                    _default(v, additional)
    elif tx is list:
        items = s.items
        if items is None:
            return
        fill = items.has_default and not items.nullable
        for i, v in enumerate(x):
            if v is None and fill:
                x[i] = v = _copy(items.default)
            if items.defaults_below and (type(v) is dict or type(v) is list):
                _default(v, items)


# --- validating the defaults of a CRD's schema ------------------------------------------------------------

_TYPE_META = {"apiVersion": "validation/v1", "kind": "Validation"}
_INDEX = None  # a step into a list, where other steps are property names


def _surround(value: Any, steps: tuple[str | None, ...]) -> dict[str, Any]:
    """The value placed at `steps` under a resource root, as upstream's SurroundingObjectFunc builds it."""
    for step in reversed(steps):
        value = [value] if step is _INDEX else {step: value}
    obj: dict[str, Any] = value if isinstance(value, dict) else {}
    for k, v in _TYPE_META.items():
        obj.setdefault(k, v)
    return obj


def validate_defaults(schema: Any, path: str, *, require_pruned: bool = True) -> list[FieldError]:
    """Errors of the `default` values in a CRD version's schema, under `path` (the schema's field path in
    the CRD, e.g. `spec.versions[0].schema.openAPIV3Schema`), as upstream's ValidateDefaults: every default
    must validate against its schema, have no unknown fields (with require_pruned) and keep embedded
    resources and their metadata valid. (Where defaults are forbidden outright, e.g. in top-level metadata,
    is the CRD schema checks' business.)"""
    root = Structural.of(schema).as_root()
    errs: list[FieldError] = []
    _validate(path, root, root, (), False, require_pruned, errs)
    return errs


def _validate(
    path: str,
    s: Structural,
    root: Structural,
    steps: tuple[str | None, ...],
    inside_meta: bool,
    require_pruned: bool,
    errs: list[FieldError],
) -> None:
    if s.embedded:
        inside_meta, steps, root = False, (), s
    if s.has_default:
        _check_default(path, s, root, steps, inside_meta, require_pruned, errs)
    # additionalProperties are not followed: upstream does not validate defaults there
    if s.items is not None:
        _validate(f"{path}.items", s.items, root, (*steps, _INDEX), inside_meta, require_pruned, errs)
    for k, p in s.properties.items():
        sub_meta = inside_meta or (s.embedded and k in META_FIELDS)
        _validate(f"{path}.properties[{k}]", p, root, (*steps, k), sub_meta, require_pruned, errs)


def _check_default(
    path: str,
    s: Structural,
    root: Structural,
    steps: tuple[str | None, ...],
    inside_meta: bool,
    require_pruned: bool,
    errs: list[FieldError],
) -> None:
    value, dpath = s.default, f"{path}.default"
    validator = SchemaValidator(s.raw, _for_defaults=True)
    if inside_meta:
        # TypeMeta and ObjectMeta defaults are checked as part of the whole resource they would land in
        obj = _surround(json_copy(value), steps)
        if (err := coerce_error("", obj, root, True)) is not None:
            errs.append(e.invalid(dpath, shown(value), f"must result in valid metadata: {err}"))
        elif meta_errs := validate_embedded("", obj, root, True):
            detail = e.aggregate(str(x) for x in meta_errs)
            errs.append(e.invalid(dpath, shown(value), f"must result in valid metadata: {detail}"))
        else:
            errs += validator.value_errors(value, dpath)
        return
    if require_pruned:
        pruned = json_copy(value)
        prune(pruned, s, is_resource_root=False)
        if not deep_equal(pruned, value):
            errs.append(e.invalid(dpath, shown(value), "must not have unknown fields"))
    if (err := coerce_error(dpath, value, s, s.embedded)) is not None:
        errs.append(err)
    elif meta_errs := validate_embedded(dpath, value, s, s.embedded):
        errs += meta_errs
    else:
        errs += validator.value_errors(value, dpath)
