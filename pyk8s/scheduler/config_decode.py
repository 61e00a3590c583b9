"""Strict decoding for the scheduler's component config: YAML/JSON parsing that refuses duplicate keys, a small
schema language checked field by field (unknown fields and type errors are reported with their field path, as
kube-scheduler's strict codecs refuse them; durations in Go's syntax come from `api/duration.py`) and the error
type every config problem is raised as.

Upstream: the kube-scheduler scheme's strict UniversalDecoder (sigs.k8s.io/yaml, sigs.k8s.io/json),
apimachinery's field errors and aggregates, and Go's time.Duration.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..api.duration import format_go_duration, parse_go_duration
from ..api.errors import FieldError, go_quote, type_invalid

__all__ = [
    "BOOL",
    "BYTES",
    "DURATION",
    "FLOAT32",
    "INT32",
    "INT64",
    "RAW",
    "STRING",
    "ConfigError",
    "GoValue",
    "ListOf",
    "MapOf",
    "Scalar",
    "Struct",
    "child",
    "decode",
    "format_go_duration",
    "index",
    "parse_document",
    "parse_go_duration",
]


class ConfigError(ValueError):
    """A scheduler configuration that cannot be loaded. `errors` holds every problem found (field errors
    print as `path: Invalid value: ...: detail`); the message joins them the way apimachinery's aggregate
    does: one error alone, or `[e1, e2, ...]` without repeats."""

    def __init__(self, errors: Iterable[FieldError | str]) -> None:
        msgs: list[str] = []
        for err in errors:
            text = str(err)
            if text not in msgs:
                msgs.append(text)
        self.errors = msgs
        super().__init__(msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")


class GoValue:
    """A value that prints in field errors as given (Go's %v / %#v rendering of non-scalar values)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def go_string(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoValue({self.text!r})"


# ---------------------------------------------------------------------------------------------------------
# Field paths, as apimachinery's field.Path prints them.


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# ---------------------------------------------------------------------------------------------------------
# Go durations.


def go_duration_value(seconds: float) -> GoValue:
    """A duration held in seconds, printed in errors as Go prints a metav1.Duration."""
    return GoValue(format_go_duration(round(seconds * 1_000_000_000)))


# ---------------------------------------------------------------------------------------------------------
# The schema language: what a field may hold, checked as Go's strict JSON decoding would.


@dataclass(frozen=True)
class Scalar:
    go_type: str  # int32 | int64 | float32 | bool | string | bytes | duration | raw


@dataclass(frozen=True)
class ListOf:
    elem: Spec


@dataclass(frozen=True)
class MapOf:
    elem: Spec


@dataclass(frozen=True)
class Struct:
    name: str
    fields: dict[str, Spec] = field(hash=False)


Spec = Scalar | ListOf | MapOf | Struct

INT32, INT64, FLOAT32 = Scalar("int32"), Scalar("int64"), Scalar("float32")
BOOL, STRING, BYTES = Scalar("bool"), Scalar("string"), Scalar("bytes")
DURATION, RAW = Scalar("duration"), Scalar("raw")

_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _shown(value: Any) -> Any:
    # Containers print as JSON in type errors; scalars as themselves.
    return value if not isinstance(value, dict | list) else GoValue(json.dumps(value, default=str))


def _type_error(path: str, value: Any, want: str) -> FieldError:
    return type_invalid(path, _shown(value), f"expected {want}, got {_json_kind(value)}")


class _Invalid:
    pass


INVALID = _Invalid()


@dataclass
class DecodeResult:
    errors: list[FieldError | str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def all_errors(self) -> list[FieldError | str]:
        out: list[FieldError | str] = list(self.errors)
        if self.unknown:
            out.append("strict decoding error: " + ", ".join(f"unknown field {go_quote(p)}" for p in self.unknown))
        return out


def _zero(spec: Spec) -> Any:
    # What a JSON null inside a list decodes to in Go: the element type's zero value.
    if isinstance(spec, Struct | MapOf):
        return {}
    if isinstance(spec, ListOf):
        return []
    return {"int32": 0, "int64": 0, "float32": 0.0, "bool": False, "duration": 0}.get(spec.go_type, "")


def decode(value: Any, spec: Spec, path: str, res: DecodeResult) -> Any:
    """Check `value` against `spec`, recording problems in `res`; returns the decoded value (objects keep
    their JSON keys, nulls dropped; durations become nanoseconds) or INVALID."""
    if isinstance(spec, Struct):
        if not isinstance(value, dict):
            res.errors.append(_type_error(path, value, "object"))
            return INVALID
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = spec.fields.get(key)
            if sub is None:
                res.unknown.append(child(path, key))
                continue
            if item is None:
                continue  # null leaves a Go field (pointer or not) unset
            decoded = decode(item, sub, child(path, key), res)
            if decoded is not INVALID:
                out[key] = decoded
        return out
    if isinstance(spec, ListOf):
        if not isinstance(value, list):
            res.errors.append(_type_error(path, value, "array"))
            return INVALID
        items = []
        for i, item in enumerate(value):
            decoded = _zero(spec.elem) if item is None else decode(item, spec.elem, index(path, i), res)
            items.append(decoded)
        return items
    if isinstance(spec, MapOf):
        if not isinstance(value, dict):
            res.errors.append(_type_error(path, value, "object"))
            return INVALID
        return {
            k: _zero(spec.elem) if v is None else decode(v, spec.elem, f"{path}[{k}]", res) for k, v in value.items()
        }
    return _decode_scalar(value, spec.go_type, path, res)


def _decode_scalar(value: Any, go_type: str, path: str, res: DecodeResult) -> Any:
    if go_type == "raw":
        return copy.deepcopy(value)
    if go_type in _INT_RANGE:
        if isinstance(value, bool) or not isinstance(value, int | float):
            res.errors.append(_type_error(path, value, go_type))
            return INVALID
        if isinstance(value, float):
            # YAML `2.0` reaches Go as the JSON number 2; a fractional number never fits an integer field.
            if not value.is_integer():
                res.errors.append(_type_error(path, value, go_type))
                return INVALID
            value = int(value)
        lo, hi = _INT_RANGE[go_type]
        if not lo <= value <= hi:
            res.errors.append(type_invalid(path, value, f"number out of range for {go_type}"))
            return INVALID
        return value
    if go_type == "float32":
        if isinstance(value, bool) or not isinstance(value, int | float):
            res.errors.append(_type_error(path, value, go_type))
            return INVALID
        return float(value)
    if go_type == "bool":
        if not isinstance(value, bool):
            res.errors.append(_type_error(path, value, "bool"))
            return INVALID
        return value
    if not isinstance(value, str):
        res.errors.append(_type_error(path, value, "string" if go_type != "duration" else "duration string"))
        return INVALID
    if go_type == "bytes":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            res.errors.append(type_invalid(path, value, "illegal base64 data"))
            return INVALID
        return value
    if go_type == "duration":
        try:
            return parse_go_duration(value)
        except ValueError as err:
            res.errors.append(type_invalid(path, value, str(err)))
            return INVALID
    return value


# ---------------------------------------------------------------------------------------------------------
# Parsing YAML and JSON documents.


class _StrictLoader(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml's strict conversion reads it: duplicate keys are errors, and dates stay
    strings (only JSON's types exist on the way to the decoder)."""


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[str, Any]:
    loader.flatten_mapping(node)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _key_text(loader.construct_object(key_node, deep=True))
        if key in out:
            raise ConfigError(
                [
                    "error converting YAML to JSON: yaml: unmarshal errors:\n"
                    f"  line {key_node.start_mark.line + 1}: key {go_quote(key)} already set in map"
                ]
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


class _DuplicateJSONKey(Exception):
    pass


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateJSONKey(key)
        out[key] = value
    return out


def parse_document(text: str) -> Any:
    """One YAML or JSON document as plain Python data; ConfigError when it does not parse."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text, object_pairs_hook=_json_pairs)
        except _DuplicateJSONKey as dup:
            raise ConfigError([f"strict decoding error: duplicate field {go_quote(str(dup))}"]) from None
        except json.JSONDecodeError:
            pass  # not JSON after all (a YAML flow mapping); let the YAML parser judge it
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as err:
        raise ConfigError([f"error converting YAML to JSON: {err}"]) from None
