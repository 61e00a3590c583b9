"""YAML as upstream reads it: go-yaml v2's scalar resolution and sigs.k8s.io/yaml's conversion to JSON.

Both kubectl (reading manifests) and kube-apiserver (reading `application/yaml` bodies) turn YAML into JSON
this way before anything else looks at it:

- YAML 1.1 booleans including `y` and `n`, `on` and `off`; Go's integer syntax (`0x1f`, `017`, `1_000`); no
  sexagesimal numbers; an unquoted timestamp stays the string it is; a number too large for Go's int64 or
  float64 stays a string;
- `!!binary` values become the string of their decoded bytes;
- keys become strings (`1`, `true`, `null` as their text); integral floats become integers (Go writes a
  float64 such as 1.0 as `1`); NaN and infinities are errors, as `json.Marshal` has them;
- alias expansion is bounded as go-yaml bounds it ("excessive aliasing"), and nesting is bounded
  (`MAX_DEPTH`), so a few hundred bytes cannot become a huge or unboundedly deep object.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Nesting deeper than this is refused on every way in (JSON, YAML, patches). Upstream's JSON scanner allows
# 10,000 levels; objects here must also survive orjson (254 levels) and the patch code's recursion, and no
# Kubernetes object comes near 100.
MAX_DEPTH = 200

# go-yaml v2's bound on alias expansion: past 1,000 decoded values and 100 aliased ones, the share of values
# reached through aliases may not exceed 99%, falling linearly to 10% between 400,000 and 4,000,000 values.
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000


class YAMLDecodeError(ValueError):
    """A document that is not valid YAML, or holds something JSON cannot carry; the message is upstream's."""


class DepthError(YAMLDecodeError):
    """Nesting beyond `MAX_DEPTH`."""


def depth_message() -> str:
    return f"exceeded max depth of {MAX_DEPTH} nested objects or arrays"


class GoYAMLLoader(_BaseLoader):  # type: ignore[misc]
    """PyYAML's safe loader resolving scalars as go-yaml v2 does. Keys become strings as they are read, so
    `1` and `true` stay two keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = json_key(self.construct_object(key_node, deep=deep))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


GoYAMLLoader.yaml_implicit_resolvers = {}
_RESOLVERS: list[tuple[str, str, str]] = [
    ("tag:yaml.org,2002:bool", r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$", "yYnNtTfFoO"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$", "-+.0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+."),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
]  # fmt: skip
for _tag, _pattern, _first in _RESOLVERS:
    GoYAMLLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
GoYAMLLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])

_BOOLS = {"y", "yes", "true", "on"}


def go_parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt(s, 0, 64): a sign, then decimal, 0x, 0o, 0b or a leading-0 octal."""
    sign, body = 1, text
    if body[:1] in "+-":
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    if not body or len(body) > 80:  # past 80 characters no int64 fits (and int() refuses thousands of digits)
        return None
    base, digits = 10, body
    prefix = body[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        base, digits = {"0x": 16, "0o": 8, "0b": 2}[prefix], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, digits = 8, body[1:]
    try:
        value = sign * int(digits, base) if digits else None
    except ValueError:
        return None
    if value is None or not -(2**63) <= value < 2**63:
        return None
    return value


def _go_parse_float(text: str) -> float | None:
    """Go's strconv.ParseFloat(s, 64) where it succeeds: out-of-range values are errors to Go, not infinities."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isinf(value) else value


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() in _BOOLS


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    plain = text.replace("_", "")
    value = go_parse_int(plain)
    if value is not None:
        return value
    # go-yaml falls back to a float, then to the string itself (`08` is 8, `0x` stays "0x").
    f = _go_parse_float(plain)
    return text if f is None else f


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    f = _go_parse_float(text.replace("_", ""))
    return text if f is None else f


def _construct_binary(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    # go-yaml decodes the base64 into a Go string; json.Marshal then writes invalid UTF-8 as U+FFFD.
    import base64
    import binascii

    text = "".join(str(loader.construct_scalar(node)).split())
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise yaml.constructor.ConstructorError(
            None, None, "!!binary value contains invalid base64 data", node.start_mark
        ) from None
    return raw.decode("utf-8", errors="replace")


GoYAMLLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
GoYAMLLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
GoYAMLLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
GoYAMLLoader.add_constructor("tag:yaml.org,2002:binary", _construct_binary)
# Explicitly tagged timestamps (`!!timestamp`) stay strings too.
GoYAMLLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def json_key(key: Any) -> str:
    """A map key as sigs.k8s.io/yaml writes it in JSON; a null or other non-scalar key is an error there."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32_key(key)
    kind = "<nil>" if key is None else type(key).__name__
    raise YAMLDecodeError(f"error converting YAML to JSON: unsupported map key of type: {kind}")


def _go_float32_key(value: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 32), with go-yaml's names for infinities and NaN."""
    if math.isnan(value) or math.isinf(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    import numpy as np

    mantissa, _, exp_text = np.format_float_scientific(np.float32(value), unique=True, trim="-").partition("e")
    negative, digits, exp = mantissa.startswith("-"), mantissa.lstrip("-").replace(".", ""), int(exp_text)
    sign = "-" if negative else ""
    if exp < -4 or exp >= 6:  # Go's %g for the shortest digits: exponent form outside [-4, 6)
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_float_name(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


class _Converter:
    """Walks a constructed YAML value into its JSON form, counting what go-yaml counts. PyYAML shares the
    value of an anchor between its aliases; a container met a second time is an alias expansion."""

    def __init__(self) -> None:
        self.decoded = 0
        self.aliased = 0
        self.alias_depth = 0
        self.seen: set[int] = set()
        self.path: set[int] = set()

    def convert(self, value: Any, depth: int) -> Any:
        self.decoded += 1
        if self.alias_depth:
            self.aliased += 1
        if self.aliased > 100 and self.decoded > 1000 and self.aliased / self.decoded > _allowed_ratio(self.decoded):
            raise YAMLDecodeError("yaml: document contains excessive aliasing")
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise DepthError(depth_message())
            ident = id(value)
            if ident in self.path:
                raise YAMLDecodeError("yaml: anchor value contains itself")
            alias = ident in self.seen
            self.seen.add(ident)
            self.path.add(ident)
            self.alias_depth += alias
            try:
                if isinstance(value, dict):
                    return {json_key(k): self.convert(v, depth + 1) for k, v in value.items()}
                return [self.convert(v, depth + 1) for v in value]
            finally:
                self.alias_depth -= alias
                self.path.discard(ident)
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise YAMLDecodeError(f"json: unsupported value: {_go_float_name(value)}")
            if value.is_integer() and abs(value) < 1e21:
                return int(value)  # Go writes this float64 without a fraction: it reads back as an integer
            return value
        if isinstance(value, str | int | bool) or value is None:
            return value
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode("utf-8", errors="replace")
        return str(value)  # sets and other explicit tags: their text


def _allowed_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def to_json_value(value: Any) -> Any:
    """A decoded YAML value as sigs.k8s.io/yaml turns it into JSON (see the module docstring)."""
    return _Converter().convert(value, 0)


def load(text: str | bytes, loader: type = GoYAMLLoader) -> Any:
    """One YAML document as the JSON value upstream reads from it; YAMLDecodeError when it is not."""
    try:
        return to_json_value(yaml.load(text, Loader=loader))
    except yaml.YAMLError as e:
        raise YAMLDecodeError(f"yaml: {_problem(e)}") from None
    except RecursionError:
        raise DepthError(depth_message()) from None
    except ValueError as e:  # Python's own limits while constructing scalars
        if isinstance(e, YAMLDecodeError):
            raise
        raise YAMLDecodeError(f"yaml: {e}") from None


def _problem(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError):
        problem = err.problem or err.context or str(err)
        if err.problem_mark is not None:
            return f"line {err.problem_mark.line + 1}: {problem}"
        return problem
    return str(err)


def json_depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON value nests deeper than `limit` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))
    return False


def bytes_may_nest_deeper(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """A cheap bound: a body with at most `limit` opening brackets cannot nest deeper than `limit`."""
    return data.count(b"{") + data.count(b"[") > limit
