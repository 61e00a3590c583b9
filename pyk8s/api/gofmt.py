"""Go's printing of decoded JSON values, for messages and documents that must read as a Go server writes
them: `%v` of a float64, `%#v` of an interface{} value, and encoding/json's `json.Marshal` (upstream: fmt and
encoding/json)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from .errors import go_quote


def _digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits of a finite non-zero |f| and the position of the decimal point in them
    (f = 0.DIGITS * 10**point)."""
    _, digits, exp = Decimal(repr(abs(f))).as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    point = len(text) + exp
    return text.rstrip("0") or "0", point


def _special(f: float) -> str | None:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    return None


def _fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _exponent(digits: str, point: int, min_width: int) -> str:
    exp = point - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):0{min_width}d}"


def go_float(f: float) -> str:
    """A float64 as Go's `%v` prints it: the shortest digits, in exponent form below 1e-4 and from 1e6."""
    special = _special(f)
    if special is not None:
        return special
    digits, point = _digits(f)
    exp = point - 1
    text = _exponent(digits, point, 2) if exp < -4 or exp >= 6 else _fixed(digits, point)
    return "-" + text if f < 0 else text


def go_json_float(f: float) -> str:
    """A float64 as Go's encoding/json writes it (plain notation between 1e-6 and 1e21); ValueError with Go's
    message for NaN and the infinities, which JSON cannot hold."""
    special = _special(f)
    if special is not None:
        if special not in ("0", "-0"):
            raise ValueError(f"json: unsupported value: {special}")
        return "0"
    digits, point = _digits(f)
    if 1e-6 <= abs(f) < 1e21:
        text = _fixed(digits, point)
    else:
        text = _exponent(digits, point, 1)
    return "-" + text if f < 0 else text


def _json_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "<>&\u2028\u2029" or ord(ch) < 0x20:
            # encoding/json escapes HTML-significant characters and the JS line separators too
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(v: Any) -> str:
    """`json.Marshal(v)` of a decoded JSON value: compact, map keys sorted, Go's number and string forms."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return _json_string(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_json_float(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{_json_string(str(k))}:{go_json(v[k])}" for k in sorted(v, key=str)) + "}"
    if isinstance(v, list | tuple):
        return "[" + ",".join(go_json(x) for x in v) + "]"
    return _json_string(str(v))


def go_sharp_v(v: Any) -> str:
    """A decoded JSON value as Go's `%#v` prints it (`map[string]interface {}{"a":1}`), which is how a
    field error shows a map or list value."""
    if v is None:
        return "interface {}(nil)"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_sharp_v(v[k])}" for k in sorted(v, key=str))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(v, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp_v(x) for x in v) + "}"
    return go_quote(str(v))
