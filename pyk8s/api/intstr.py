"""IntOrString values scaled against a total (upstream: apimachinery/pkg/util/intstr,
GetScaledValueFromIntOrPercent): `3` is 3, `"25%"` is a quarter of the total, rounded up or down as the caller's
field wants (maxSurge up, a Deployment's maxUnavailable down, a DaemonSet's and a budget's up)."""

from __future__ import annotations

import math
from typing import Any


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """`value` (an int, or a string "N%") against `total`; 0 for None; ValueError for a string that is not a
    percentage."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {text!r}")
    try:
        pct = int(text[:-1])
    except ValueError:
        raise ValueError(f"invalid value for IntOrString: invalid value {text!r}") from None
    scaled = pct * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)
