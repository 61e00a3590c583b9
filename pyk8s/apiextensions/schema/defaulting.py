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
from .pruning import (
    META_FIELDS,
    Structural,
    _keep_unknown,
    _prune,
    _prune_nulls,
    prune,
    prune_non_nullable_nulls,
    structural,
)
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


# --- pruning, dropping nulls and defaulting in one walk ----------------------------------------------------


def prune_and_default(obj: Any, schema: Any) -> list[str]:
    """What a custom resource's decode does with its schema, in one walk: `prune(obj, schema)` (the unknown
    fields' paths are returned, sorted), then `prune_non_nullable_nulls` and `default`, with the same result
    as the three in turn (each touches a field only through what is below it, so one visit can do all three)."""
    s = structural(schema) if schema is not None else None
    if s is None or type(obj) is not dict or s.preserve:
        out = prune(obj, schema, is_resource_root=True)
        prune_non_nullable_nulls(obj, schema)
        default(obj, schema)
        return out
    out = []
    _object(obj, s.as_root(), "", out)
    out.sort()
    return out


def _apart(x: Any, s: Structural, path: str, out: list[str]) -> None:
    # The three in turn, on a value below x-kubernetes-preserve-unknown-fields (rare enough to walk thrice).
    _keep_unknown(x, s, path, out)
    _prune_nulls(x, s)
    if s.defaults_below:
        _default(x, s)


def _object(x: dict[str, Any], s: Structural, path: str, out: list[str]) -> None:
    props, embedded, has_additional, additional = s.properties, s.embedded, s.has_additional, s.additional
    doomed: list[str] = []  # (deleted after the walk: not while iterating)
    for k, v in x.items():
        t = type(v)
        if t is str or t is int or t is bool or t is float:
            # a scalar (most fields): nothing to drop, fill in or walk; only pruned when undeclared
            if k in props or has_additional or (embedded and k in META_FIELDS):
                continue
            if k not in META_FIELDS or path:  # at the root the meta fields go silently
                out.append(f"{path}.{k}" if path else k)
            doomed.append(k)
            continue
        p = props.get(k)
        sub = p if p is not None else additional
        if embedded and k in META_FIELDS:
            # not pruned (TypeMeta and ObjectMeta are coerced instead), but nulls and defaults apply below
            if v is None:
                if sub is not None and not sub.nullable:
                    if not sub.has_default:
                        doomed.append(k)
                    elif p is None:
                        x[k] = v = _copy(sub.default)
                        if sub.defaults_below and (type(v) is dict or type(v) is list):
                            _default(v, sub)
            elif sub is not None and (type(v) is dict or type(v) is list):  # (without a schema, nothing to do)
                _prune_nulls(v, sub)
                if sub.defaults_below:
                    _default(v, sub)
            continue
        if p is None and not has_additional:
            if k not in META_FIELDS or path:  # at the root the meta fields go silently
                out.append(f"{path}.{k}" if path else k)
            doomed.append(k)
        elif v is None:
            if sub is None:
                continue
            if not sub.nullable:
                if not sub.has_default:
                    doomed.append(k)
                elif p is None:  # an additionalProperties value: properties are defaulted below
                    x[k] = v = _copy(sub.default)
                    if sub.defaults_below and (type(v) is dict or type(v) is list):
                        _default(v, sub)
        elif t is dict or t is list:
            at = f"{path}.{k}" if path else k
            if sub is None:
                _prune(v, None, at, out)
            elif sub.preserve:
                _apart(v, sub, at, out)
            elif t is dict:
                _object(v, sub, at, out)
            else:
                _array(v, sub, at, out)
    for k in doomed:
        del x[k]
    for k, p in s.defaulted:
        v = x.get(k, x)
        if v is x or (v is None and not p.nullable):
            x[k] = v = _copy(p.default)
            if p.defaults_below and (type(v) is dict or type(v) is list):
                _default(v, p)


def _array(x: list[Any], s: Structural, path: str, out: list[str]) -> None:
    items = s.items
    if items is None:
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                _prune(v, None, f"{path}[{i}]", out)
        return
    fill = items.has_default and not items.nullable
    for i, v in enumerate(x):
        if v is None:
            if fill:
                x[i] = v = _copy(items.default)
                if items.defaults_below and (type(v) is dict or type(v) is list):
                    _default(v, items)
        elif type(v) is dict or type(v) is list:
            at = f"{path}[{i}]"
            if items.preserve:
                _apart(v, items, at, out)
            elif type(v) is dict:
                _object(v, items, at, out)
            else:
                _array(v, items, at, out)


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
