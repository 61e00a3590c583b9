"""JSON values as upstream's Go code sees them: strict equality (an int64 never equals a float64), the text
Go prints for a value in messages (`%v` of a float, `%#v` of a map, `json.Marshal`), and the wrappers that
make a FieldError render such values as a real cluster does (upstream: reflect.DeepEqual, fmt, encoding/json).
"""

from __future__ import annotations

import math
from typing import Any

from ...api.gofmt import go_float, go_json, go_json_float, go_sharp_v

__all__ = ["INT64_MAX", "INT64_MIN", "GoFloat", "GoValue", "deep_equal", "go_float", "go_int64", "go_json",
           "go_json_float", "shown"]  # fmt: skip

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class GoFloat(float):
    """A float that a FieldError renders as Go's `%v` does (`20`, not `20.0`; `1e+06`)."""

    __slots__ = ()

    def go_string(self) -> str:
        return go_float(self)


class GoValue:
    """A map or list value that a FieldError renders as Go's `%#v` does; compares equal to the plain value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def go_string(self) -> str:
        return go_sharp_v(self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, GoValue) else other)

    def __hash__(self) -> int:
        return hash(go_sharp_v(self.value))

    def __repr__(self) -> str:
        return f"GoValue({self.value!r})"


def shown(v: Any) -> Any:
    """The bad value to put in a FieldError so it prints as upstream's does."""
    t = type(v)
    if t is float:
        return GoFloat(v)
    if t is dict or t is list:
        return GoValue(v)
    return v


def deep_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual over decoded JSON: types must match exactly (1 != 1.0, True != 1)."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not deep_equal(v, b[k]):
                return False
        return True
    if ta is list:
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def go_int64(v: int | float) -> int | None:
    """int64(v) as Go converts a number (truncating a float), or None where Go's result is undefined."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        v = int(v)
    return v if INT64_MIN <= v <= INT64_MAX else None
