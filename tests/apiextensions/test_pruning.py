"""Pruning of unknown fields from custom resources and of nulls from non-nullable fields: the pruned object
and the paths upstream reports as `unknown field "<path>"`. Cases ported from apiextensions-apiserver
v0.32.4's pruning/algorithm_test.go and defaulting/prunenulls_test.go, plus properties: pruning is idempotent
and removes exactly the undeclared fields."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.apiextensions.schema.pruning import prune, prune_non_nullable_nulls

from .test_schema_validation import JSON, ROOT_SCHEMAS, schemas_and_values

A_C = {"type": "object", "properties": {"a": {}, "c": {}}}
PRESERVING = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "alpha": {"type": "string"},
        "beta": {"type": "number"},
        "pruning": {"type": "object", "properties": {
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "pruning": {"type": "object"},
        }},
        "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": True},
            "pruning": {"type": "object"},
        }},
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}},
        },
        "preservingAdditionalPropertiesKeyPruneValues": {
            "type": "object",
            "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}},
        },
    },
}  # fmt: skip
PRESERVING_IN = """{
  "unspecified": "bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
              "apiVersion": "unknown", "preserving": {"unspecified": "bar"}},
  "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {"unspecified": "bar"},
                 "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo": true}, {"bar": true}]},
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields":
    {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
  "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}}
}"""
PRESERVING_OUT = """{
  "unspecified": "bar", "alpha": "abc", "beta": 42.0, "unspecifiedObject": {"unspecified": "bar"},
  "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
  "preserving": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                 "preserving": {"unspecified": "bar"}, "preservingUnknownType": [{"foo": true}, {"bar": true}]},
  "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
  "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}
}"""
EMBEDDED = {
    "type": "object",
    "properties": {
        "pruned": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {"type": "object"}}},
        "preserving": {"type": "object", "x-kubernetes-embedded-resource": True,
                       "x-kubernetes-preserve-unknown-fields": True},
        "nested": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
            "spec": {"type": "object", "properties": {
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object"}}}}}}},
    },
}  # fmt: skip
_RESOURCE = '"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"}'
EMBEDDED_IN = f"""{{
  {_RESOURCE}, "unspecified": "bar",
  "pruned": {{{_RESOURCE}, "unspecified": "bar", "spec": {{"unspecified": "bar"}}}},
  "preserving": {{{_RESOURCE}, "unspecified": "bar", "spec": {{"unspecified": "bar"}}}},
  "nested": {{{_RESOURCE}, "unspecified": "bar", "spec": {{"unspecified": "bar",
    "embedded": {{{_RESOURCE}, "unspecified": "bar", "spec": {{"unspecified": "bar"}}}}}}}}
}}"""
EMBEDDED_OUT = f"""{{
  "pruned": {{{_RESOURCE}, "spec": {{}}}},
  "preserving": {{{_RESOURCE}, "unspecified": "bar", "spec": {{"unspecified": "bar"}}}},
  "nested": {{{_RESOURCE}, "spec": {{"embedded": {{{_RESOURCE}, "spec": {{}}}}}}}}
}}"""
EMBEDDED_PRUNED = [
    "nested.spec.embedded.spec.unspecified", "nested.spec.embedded.unspecified", "nested.spec.unspecified",
    "nested.unspecified", "pruned.spec.unspecified", "pruned.unspecified", "unspecified",
]  # fmt: skip

CASES: list[tuple[str, str, Any, bool, str, list[str]]] = [
    ("empty", "null", None, False, "null", []),
    ("scalar", "4", {}, False, "4", []),
    ("scalar array", "[1,2]", {"items": {}}, False, "[1,2]", []),
    ("object array", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', {"items": A_C}, False,
     '[{"a":1},{},{"a":1,"c":3}]', ["[1].b", "[2].b"]),
    ("object array with nil schema", '[{"a":1},{"b":1},{"a":1,"b":2,"c":3}]', None, False, "[{},{},{}]",
     ["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"]),
    ("object array object",
     '{"array":[{"a":1},{"b":1},{"a":1,"b":2,"c":3}],"unspecified":{"a":1},"specified":{"a":1,"b":2,"c":3}}',
     {"properties": {"array": {"items": A_C}, "specified": A_C}}, False,
     '{"array":[{"a":1},{},{"a":1,"c":3}],"specified":{"a":1,"c":3}}',
     ["array[1].b", "array[2].b", "specified.b", "unspecified"]),
    ("nested x-kubernetes-preserve-unknown-fields", PRESERVING_IN, PRESERVING, False, PRESERVING_OUT, [
        "preserving.pruning.unspecified",
        "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
        "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
        "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
        "pruning.apiVersion", "pruning.pruning.unspecified", "pruning.unspecified", "pruning.unspecifiedObject",
    ]),
    ("additionalProperties with schema", '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1}}}',
     {"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}}, False,
     '{"a":1,"c":{"a":1,"b":2,"c":{}}}', ["b", "c.c.a"]),
    ("additionalProperties with bool", '{"a":1,"b":1,"c":{"a":1,"b":2,"c":{"a":1, "apiVersion": "unknown"}}}',
     {"properties": {"a": {}, "c": {"additionalProperties": False}}}, False,
     '{"a":1,"c":{"a":1,"b":2,"c":{}}}', ["b", "c.c.a", "c.c.apiVersion"]),
    ("x-kubernetes-embedded-resource", EMBEDDED_IN, EMBEDDED, False, EMBEDDED_OUT, EMBEDDED_PRUNED),
    ("x-kubernetes-embedded-resource, with root=true", EMBEDDED_IN, EMBEDDED, True,
     EMBEDDED_OUT.replace("{\n", "{" + _RESOURCE + ",\n", 1), EMBEDDED_PRUNED),
    ("a resource root keeps its meta fields", '{"apiVersion":"v1","kind":"K","metadata":{"x":1},"spec":{"a":1}}',
     {"type": "object", "properties": {"spec": {"type": "object"}}}, True,
     '{"apiVersion":"v1","kind":"K","metadata":{"x":1},"spec":{}}', ["spec.a"]),
    ("list items are indexed", '{"spec":{"items":[{"foo":1,"bar":2}]}}',
     {"properties": {"spec": {"properties": {"items": {"items": {"properties": {"foo": {}}}}}}}}, True,
     '{"spec":{"items":[{"foo":1}]}}', ["spec.items[0].bar"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("json_in", "schema", "is_root", "json_out", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_prune(json_in: str, schema: Any, is_root: bool, json_out: str, want: list[str]) -> None:
    obj = json.loads(json_in)
    assert prune(obj, schema, is_resource_root=is_root) == want
    assert obj == json.loads(json_out)


NULLS_SCHEMA = {"items": {"properties": {
    "a": {"default": "A"}, "b": {"nullable": True}, "c": {"default": "C", "nullable": True}, "d": {},
}}}  # fmt: skip


@pytest.mark.parametrize(
    ("json_in", "schema", "json_out"),
    [
        ("null", None, "null"),
        ("4", {"default": "foo"}, "4"),
        ("[1,null]", None, "[1,null]"),
        ('[{"a":null},{"b":null},{"c":null},{"d":null},{"e":null}]', NULLS_SCHEMA,
         '[{"a":null},{"b":null},{"c":null},{},{"e":null}]'),
        ('{"m":{"x":null,"y":1}}', {"properties": {"m": {"additionalProperties": {"type": "integer"}}}},
         '{"m":{"y":1}}'),
    ],
)  # fmt: skip
def test_prune_non_nullable_nulls(json_in: str, schema: Any, json_out: str) -> None:
    obj = json.loads(json_in)
    prune_non_nullable_nulls(obj, schema)
    assert obj == json.loads(json_out)


def _add_unknown(value: Any, schema: dict[str, Any], path: str, added: list[str]) -> None:
    """Put an undeclared field into every object the schema declares properties for."""
    if isinstance(value, dict) and "properties" in schema:
        for k, v in value.items():
            _add_unknown(v, schema["properties"][k], f"{path}.{k}" if path else k, added)
        value["zz-unknown"] = {"nested": [1]}
        added.append(f"{path}.zz-unknown" if path else "zz-unknown")
    elif isinstance(value, dict) and "additionalProperties" in schema:
        for k, v in value.items():
            _add_unknown(v, schema["additionalProperties"], f"{path}.{k}" if path else k, added)
    elif isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            _add_unknown(v, schema["items"], f"{path}[{i}]", added)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_values(), st.booleans())
def test_pruning_removes_exactly_the_undeclared_fields(case: tuple[dict[str, Any], Any], is_root: bool) -> None:
    schema, value = case
    obj = copy.deepcopy(value)
    added: list[str] = []
    _add_unknown(obj, schema, "", added)
    assert prune(obj, schema, is_resource_root=is_root) == sorted(added)
    assert obj == value  # every declared field is still there, unchanged
    again = copy.deepcopy(obj)
    assert prune(again, schema, is_resource_root=is_root) == []
    assert again == obj


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROOT_SCHEMAS | st.dictionaries(st.sampled_from(["properties", "items", "additionalProperties"]), JSON), JSON)
def test_pruning_odd_input_does_not_raise(schema: Any, value: Any) -> None:
    paths = prune(value, schema)
    prune_non_nullable_nulls(value, schema)
    assert prune(value, schema) == []
    assert paths == sorted(paths)
