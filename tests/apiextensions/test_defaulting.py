"""Defaulting of custom resources from their schema, and the CRD-time validation of `default` values with
upstream's paths and messages. Defaulting cases are ported from apiextensions-apiserver v0.32.4's
defaulting/algorithm_test.go; properties: defaulting is idempotent and keeps a valid object valid."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.apiextensions.schema.defaulting import default, validate_defaults
from pyk8s.apiextensions.schema.validation import SchemaValidator

from .test_schema_validation import ROOT_SCHEMAS, values

ABC = {"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}, "c": {"default": "C"}}}}
OBJECT_ARRAY_OBJECT = {
    "properties": {
        "array": {"items": {"properties": {"a": {"default": "A"}, "b": {"default": "B"}}}},
        "object": {"properties": {"a": {"default": "N"}, "b": {"default": "O"}}},
        "additionalProperties": {"additionalProperties": {"properties": {"a": {"default": "alpha"},
                                                                         "b": {"default": "beta"}}}},
        "foo": {"default": "bar"},
    }
}  # fmt: skip

CASES: list[tuple[str, str, Any, str]] = [
    ("empty", "null", None, "null"),
    ("scalar", "4", {"default": "foo"}, "4"),
    ("scalar array", "[1,2]", {"items": {"default": "foo"}}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"c":1}]', ABC,
     '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]'),
    ("object array object", '{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}',
     OBJECT_ARRAY_OBJECT,
     '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},'
     '"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}'),
    ("empty and null", '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]',
     {"items": {"properties": {"a": {"default": "A"}}}},
     '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]'),
    ("null in nullable list", "[null]", {"nullable": True, "items": {"properties": {"a": {"default": "A"}}}}, "[null]"),
    ("null in non-nullable list", "[null]", {"items": {"default": "A"}}, '["A"]'),
    ("null in nullable object", '{"a": null}', {"properties": {"a": {"nullable": True, "default": "A"}}}, '{"a": null}'),
    ("null in non-nullable object", '{"a": null}', {"properties": {"a": {"default": "A"}}}, '{"a": "A"}'),
    ("null in nullable additionalProperties", '{"a": null}',
     {"additionalProperties": {"nullable": True, "default": "A"}}, '{"a": null}'),
    ("null in non-nullable additionalProperties", '{"a": null}', {"additionalProperties": {"default": "A"}},
     '{"a": "A"}'),
    ("null unknown field", '{"a": null}', {"additionalProperties": True}, '{"a": null}'),
    ("defaults inside a default apply too", "{}",
     {"properties": {"s": {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 3}}}}},
     '{"s": {"n": 3}}'),
    ("a default is pruned before it applies", "{}",
     {"properties": {"s": {"type": "object", "default": {"a": 1, "x": 2}, "properties": {"a": {"type": "integer"}}}}},
     '{"s": {"a": 1}}'),
]  # fmt: skip


@pytest.mark.parametrize(("json_in", "schema", "json_out"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default(json_in: str, schema: Any, json_out: str) -> None:
    obj = json.loads(json_in)
    default(obj, schema)
    assert obj == json.loads(json_out)


def test_defaults_are_deep_copies() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "object", "default": {"l": [1]},
                                                     "properties": {"l": {"type": "array", "items": {}}}}}}  # fmt: skip
    first, second = {}, {}
    default(first, schema)
    default(second, schema)
    first["s"]["l"].append(2)
    assert second == {"s": {"l": [1]}}
    assert schema["properties"]["s"]["default"] == {"l": [1]}


ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _embedded(**props: Any) -> dict[str, Any]:
    return {"type": "object", "x-kubernetes-embedded-resource": True, "properties": props}


DEFAULT_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid defaults", {"a": {"type": "integer", "default": 1},
                        "e": {**_embedded(foo={"type": "string"}),
                              "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1",
                                          "metadata": {"name": "foo"}}}}, []),
    ("wrong type", {"a": {"type": "integer", "default": "x"}},
     [f'{ROOT}.properties[a].default: Invalid value: "string":  in body must be of type integer: "string"']),
    ("out of range", {"a": {"type": "integer", "maximum": 10, "default": 20}},
     [f"{ROOT}.properties[a].default: Invalid value: 20:  in body should be less than or equal to 10"]),
    ("nested wrong type", {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, "default": {"b": "x"}}},
     [f'{ROOT}.properties[a].default.b: Invalid value: "string": b in body must be of type integer: "string"']),
    ("in items", {"l": {"type": "array", "items": {"type": "object", "properties": {
        "x": {"type": "string", "enum": ["a"], "default": "b"}}}}},
     [f'{ROOT}.properties[l].items.properties[x].default: Unsupported value: "b": supported values: "a"']),
    ("unknown fields", {"b": {"type": "object", "properties": {"c": {"type": "string"}}, "default": {"c": "x", "d": 1}}},
     [f'{ROOT}.properties[b].default: Invalid value: map[string]interface {{}}{{"c":"x", "d":1}}: '
      "must not have unknown fields"]),
    ("embedded resource without kind", {"e": {**_embedded(), "x-kubernetes-preserve-unknown-fields": True,
                                              "default": {"apiVersion": "v1"}}},
     [f"{ROOT}.properties[e].default.kind: Required value: must not be empty"]),
    ("embedded metadata name", {"e": _embedded(metadata={"type": "object", "properties": {
        "name": {"type": "string", "default": "a/b"}}})},
     [f'{ROOT}.properties[e].properties[metadata].properties[name].default: Invalid value: "a/b": '
      "must result in valid metadata: metadata.name: Invalid value: \"a/b\": may not contain '/'"]),
    ("embedded metadata wrongly typed", {"e": _embedded(metadata={"type": "object", "properties": {
        "name": {"type": "string", "default": 42}}})},
     [f"{ROOT}.properties[e].properties[metadata].properties[name].default: Invalid value: 42: must result in valid "
      'metadata: metadata: Invalid value: map[string]interface {}{"name":42}: json: cannot unmarshal number into Go '
      "struct field ObjectMeta.name of type string"]),
    ("embedded kind", {"e": _embedded(kind={"type": "string", "default": "%"})},
     [f'{ROOT}.properties[e].properties[kind].default: Invalid value: "%": must result in valid metadata: '
      'kind: Invalid value: "%": may have mixed case, but should otherwise match: a DNS-1035 label must consist of '
      "lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
      "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("top-level metadata is checked with the whole resource",
     {"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "a/b"}}}},
     [f'{ROOT}.properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid '
      "metadata: metadata.name: Invalid value: \"a/b\": may not contain '/'"]),
]  # fmt: skip


@pytest.mark.parametrize(("props", "want"), [c[1:] for c in DEFAULT_CASES], ids=[c[0] for c in DEFAULT_CASES])
def test_validate_defaults(props: dict[str, Any], want: list[str]) -> None:
    schema = {"type": "object", "properties": props}
    assert [str(e) for e in validate_defaults(schema, ROOT)] == want


def test_unpruned_defaults_may_be_allowed() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "object", "default": {"d": 1}}}}
    assert len(validate_defaults(schema, ROOT)) == 1
    assert validate_defaults(schema, ROOT, require_pruned=False) == []


@st.composite
def defaulted_schemas_and_values(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(ROOT_SCHEMAS)

    def add_defaults(s: dict[str, Any]) -> None:
        for p in s.get("properties", {}).values():
            add_defaults(p)
            if draw(st.booleans()):
                p["default"] = draw(values(p))
        for k in ("items", "additionalProperties"):
            if isinstance(s.get(k), dict):
                add_defaults(s[k])

    add_defaults(schema)
    return schema, draw(values(schema))


def _keeps(defaulted: Any, original: Any) -> bool:
    """Whether every value set in original is still in defaulted (which may have more fields)."""
    if isinstance(original, dict):
        return isinstance(defaulted, dict) and all(
            v is None or (k in defaulted and _keeps(defaulted[k], v)) for k, v in original.items()
        )
    if isinstance(original, list):
        return (
            isinstance(defaulted, list)
            and len(defaulted) == len(original)
            and all(_keeps(d, o) for d, o in zip(defaulted, original, strict=True))
        )
    return type(defaulted) is type(original) and defaulted == original


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defaulted_schemas_and_values())
def test_defaulting_is_idempotent_and_keeps_values_valid(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    assert validate_defaults(schema, ROOT) == []
    once = copy.deepcopy(value)
    default(once, schema)
    twice = copy.deepcopy(once)
    default(twice, schema)
    assert twice == once
    assert _keeps(once, value)  # fields that are set are never overwritten
    assert SchemaValidator(schema).validate(once) == []
