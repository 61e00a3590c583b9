"""ResourceList arithmetic for quota (upstream: apiserver/pkg/quota/v1/resources.go): resource name -> exact
Quantity, with upstream's Add, Subtract, Mask, LessThanOrEqual and the `name=qty,...` form of its messages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ....api.quantity import Quantity, QuantityError, parse_quantity

ResourceList = dict[str, Quantity]

ZERO = Quantity(0)


def parse(value: Any) -> ResourceList:
    """A ResourceList from an object's JSON; a quantity that does not parse is left out (validation refused it)."""
    out: ResourceList = {}
    if isinstance(value, Mapping):
        for k, v in value.items():
            try:
                out[str(k)] = parse_quantity(str(v))
            except QuantityError:
                continue
    return out


def to_json(rl: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in rl.items()}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] + v if k in out else v
    return out


def subtract(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] - v if k in out else -v
    return out


def subtract_with_non_negative_result(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a - b per resource of either, with any negative result zero (upstream: SubtractWithNonNegativeResult)."""
    out: ResourceList = {}
    for k in {*a, *b}:
        diff = a.get(k, ZERO) - b.get(k, ZERO)
        out[k] = diff if diff.sign > 0 else ZERO
    return out


def max_of(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        if k not in out or v > out[k]:
            out[k] = v
    return out


def mask(rl: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def less_than_or_equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> tuple[bool, list[str]]:
    """Whether every resource of `a` that `b` also names is within it; the ones that are not."""
    exceeded = [k for k, v in a.items() if k in b and v > b[k]]
    return not exceeded, exceeded


def is_negative(rl: Mapping[str, Quantity]) -> list[str]:
    return [k for k, v in rl.items() if v.sign < 0]


def remove_zeros(rl: Mapping[str, Quantity]) -> ResourceList:
    return {k: v for k, v in rl.items() if not v.is_zero}


def equals(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    return set(a) == set(b) and all(a[k] == b[k] for k in a)


def pretty_print(rl: Mapping[str, Quantity]) -> str:
    return ",".join(f"{k}={rl[k]}" for k in sorted(rl))


def pretty_print_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))
