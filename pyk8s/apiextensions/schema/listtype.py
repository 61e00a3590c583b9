"""The uniqueness invariants of `x-kubernetes-list-type` lists in a custom resource: whole items of a `set`,
the key fields of a `map` (upstream: apiextensions-apiserver pkg/apiserver/schema/listtype/validation.go).
"""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api.errors import FieldError
from .pruning import Structural
from .values import go_json, shown

_UNSPECIFIED = ("unspecified",)  # a list-map item without its key (or a null item)


def validate_lists(obj: Any, s: Structural | None, path: str = "") -> list[FieldError]:
    """Duplicate items of set lists and duplicate keys of map lists anywhere in obj."""
    if s is None or not s.listtype_below or type(obj) is not dict:
        return []
    errs: list[FieldError] = []
    _object(path, obj, s, errs)
    return errs


def _object(path: str, obj: dict[str, Any], s: Structural, errs: list[FieldError]) -> None:
    additional = s.additional
    if additional is not None and additional.listtype_below:
        for k, v in obj.items():
            _value(f"{path}[{k}]", v, additional, errs)
    for k, v in obj.items():
        p = s.properties.get(k)
        if p is not None and p.listtype_below:
            _value(f"{path}.{k}" if path else k, v, p, errs)


def _value(path: str, x: Any, s: Structural, errs: list[FieldError]) -> None:
    if type(x) is list:
        _array(path, x, s, errs)
    elif type(x) is dict:
        _object(path, x, s, errs)


def _scalar_key(x: Any) -> Any:
    # Go compares interface values: an int64 never equals a float64, nor a bool a number.
    return (type(x).__name__, x)


def _duplicates(items: list[Any]) -> list[int]:
    """The index of the second appearance of every value that appears more than once."""
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, x in enumerate(items):
        if x is _UNSPECIFIED:
            key: Any = x
        elif type(x) is dict or type(x) is list:
            key = ("json", go_json(x))
        else:
            key = _scalar_key(x)
        times = seen.get(key, 0)
        if times == 1:
            out.append(i)
        seen[key] = times + 1
    return out


def _array(path: str, x: list[Any], s: Structural, errs: list[FieldError]) -> None:
    if s.list_type == "set":
        errs.extend(e.duplicate(f"{path}[{i}]", shown(x[i])) for i in _duplicates(x))
    elif s.list_type == "map":
        _map_list(path, x, s, errs)
    if s.items is not None and s.items.listtype_below:
        for i, item in enumerate(x):
            _value(f"{path}[{i}]", item, s.items, errs)


def _map_list(path: str, x: list[Any], s: Structural, errs: list[FieldError]) -> None:
    for i, item in enumerate(x):
        if item is not None and type(item) is not dict:
            errs.append(e.invalid(f"{path}[{i}]", shown(item), "must be an object for an array of list-type map"))
            return
    if len(x) <= 1:
        return
    names = s.list_map_keys
    if len(names) == 1:
        name = names[0]
        keys = [_UNSPECIFIED if item is None or name not in item else item[name] for item in x]
        for i in _duplicates(keys):
            value: dict[str, Any] = {} if keys[i] is _UNSPECIFIED else {name: keys[i]}
            errs.append(e.duplicate(f"{path}[{i}]", shown(value)))
        return
    composite = [{} if item is None else {n: item[n] for n in names if n in item} for item in x]
    errs.extend(e.duplicate(f"{path}[{i}]", shown(composite[i])) for i in _duplicates(composite))


def items_unique(x: list[Any], list_type: str, keys: tuple[str, ...]) -> bool:
    """Whether a list of type `list_type` (set, map with `keys`) breaks none of its own invariants: what
    validate_lists reports at the list itself (not below it) is nothing."""
    if list_type == "set":
        return not _duplicates(x)
    if list_type != "map":
        return True
    for item in x:
        if item is not None and type(item) is not dict:
            return False
    if len(x) <= 1:
        return True
    if len(keys) == 1:
        name = keys[0]
        return not _duplicates([_UNSPECIFIED if item is None or name not in item else item[name] for item in x])
    return not _duplicates([{} if item is None else {n: item[n] for n in keys if n in item} for item in x])
