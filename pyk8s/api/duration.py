"""Go's duration syntax (time.ParseDuration, time.Duration.String, metav1.Duration on the wire): what
upstream's flags and configuration files take, and how upstream's messages print durations."""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import go_quote

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_NUMBER = re.compile(r"([0-9]*)(?:(\.)([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]+")
_MAX_NS = 2**63 - 1


def parse_go_duration(text: str) -> int:
    """Nanoseconds in a Go duration string ("1h2m3.5s", "300ms", "-1.5h"); ValueError with Go's message."""
    orig, s, neg = text, text, False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {go_quote(orig)}")
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        num = _NUMBER.match(s, pos)
        assert num is not None  # the pattern can match the empty string
        whole, dot, frac = num.group(1), num.group(2), num.group(3) or ""
        if not whole and not frac:
            raise ValueError(f"time: invalid duration {go_quote(orig)}")
        pos = num.end()
        unit_match = _UNIT.match(s, pos)
        if unit_match is None:
            raise ValueError(f"time: missing unit in duration {go_quote(orig)}")
        unit = unit_match.group(0)
        pos = unit_match.end()
        if unit not in _NS_PER_UNIT:
            raise ValueError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(orig)}")
        value = Fraction(int(whole or "0"))
        if dot and frac:
            value += Fraction(int(frac), 10 ** len(frac))
        total += value * _NS_PER_UNIT[unit]
    ns = int(total)  # Go drops fractions of a nanosecond
    if ns > _MAX_NS + (1 if neg else 0):
        raise ValueError(f"time: invalid duration {go_quote(orig)}")
    return -ns if neg else ns


def _trimmed_fraction(value: int, digits: int) -> str:
    text = f"{value:0{digits}d}".rstrip("0")
    return "." + text if text else ""


def format_go_duration(ns: int) -> str:
    """Go's time.Duration.String(): "15s", "1m30s", "1h0m0s", "1.5ms", "0s"."""
    if ns == 0:
        return "0s"
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{u // 1_000}{_trimmed_fraction(u % 1_000, 3)}µs"
        return f"{sign}{u // 1_000_000}{_trimmed_fraction(u % 1_000_000, 6)}ms"
    secs, frac = divmod(u, 1_000_000_000)
    out = f"{secs % 60}{_trimmed_fraction(frac, 9)}s"
    minutes = secs // 60
    if minutes:
        out = f"{minutes % 60}m{out}"
        hours = minutes // 60
        if hours:
            out = f"{hours}h{out}"
    return sign + out
