"""Validation of custom resources against CRD schemas: upstream's exact field errors for each keyword, list
types, embedded resources, formats and ratcheting, plus the property that a value built to fit a schema
validates cleanly. Many cases are ported from apiextensions-apiserver v0.32.4's validation_test.go."""

from __future__ import annotations

import base64
import datetime
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.apiextensions.schema.validation import SchemaValidator


def obj_schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def errors(schema: dict[str, Any], obj: Any) -> list[str]:
    return sorted(str(e) for e in SchemaValidator(schema).validate(obj))


FIELD_INT_OR_STRING_ANYOF = obj_schema(
    field={"nullable": True, "x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
)
FIELD_INT_OR_STRING_ALLOF = obj_schema(
    field={
        "nullable": True,
        "x-kubernetes-int-or-string": True,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}],
    }
)
SPEC = obj_schema(
    spec={
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "replicas": {"type": "integer", "maximum": 10},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "size": {"type": "integer"},
        },
    }
)

CASES: list[tuple[str, dict[str, Any], Any, list[str]]] = [
    # -- from upstream TestValidateCustomResource ---------------------------------------------------------
    ("!nullable string", obj_schema(field={"type": "object"}), {"field": "foo"},
     ['field: Invalid value: "string": field in body must be of type object: "string"']),
    ("!nullable integer", obj_schema(field={"type": "object"}), {"field": 42},
     ['field: Invalid value: "integer": field in body must be of type object: "integer"']),
    ("!nullable number", obj_schema(field={"type": "object"}), {"field": 1.2},
     ['field: Invalid value: "number": field in body must be of type object: "number"']),
    ("!nullable array", obj_schema(field={"type": "object"}), {"field": []},
     ['field: Invalid value: "array": field in body must be of type object: "array"']),
    ("!nullable null", obj_schema(field={"type": "object"}), {"field": None},
     ['field: Invalid value: "null": field in body must be of type object: "null"']),
    ("nullable null", obj_schema(field={"type": "object", "nullable": True}), {"field": None}, []),
    ("nullable boolean", obj_schema(field={"type": "object", "nullable": True}), {"field": True},
     ['field: Invalid value: "boolean": field in body must be of type object: "boolean"']),
    ("nullable, no type", obj_schema(field={"nullable": True}), {"field": [1, "x"]}, []),
    ("int-or-string int", obj_schema(field={"x-kubernetes-int-or-string": True}), {"field": 42}, []),
    ("int-or-string string", obj_schema(field={"x-kubernetes-int-or-string": True}), {"field": "foo"}, []),
    ("int-or-string null", obj_schema(field={"x-kubernetes-int-or-string": True}), {"field": None},
     ['field: Invalid value: "null": field in body must be of type integer,string: "null"']),
    ("int-or-string float", obj_schema(field={"x-kubernetes-int-or-string": True}), {"field": 1.2},
     ['field: Invalid value: "number": field in body must be of type integer,string: "number"']),
    ("int-or-string anyOf boolean", FIELD_INT_OR_STRING_ANYOF, {"field": True}, [
        '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
        'field: Invalid value: "boolean": field in body must be of type integer,string: "boolean"',
        'field: Invalid value: "boolean": field in body must be of type integer: "boolean"',
    ]),
    ("int-or-string anyOf null", FIELD_INT_OR_STRING_ANYOF, {"field": None}, []),
    ("int-or-string allOf object", FIELD_INT_OR_STRING_ALLOF, {"field": {}}, [
        '<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated',
        '<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)',
        'field: Invalid value: "object": field in body must be of type integer,string: "object"',
        'field: Invalid value: "object": field in body must be of type integer: "object"',
    ]),
    ("int-or-string allOf string", FIELD_INT_OR_STRING_ALLOF, {"field": "foo"}, []),
    ("invalid regex", obj_schema(field={"type": "string", "pattern": "+"}), {"field": "foo"},
     ["field: Invalid value: \"foo\": field in body should match '+, but pattern is invalid: error parsing regexp: "
      "missing argument to repetition operator: `+`'"]),
    ("required field",
     {"type": "object", "required": ["field"], "properties": {"field": {"type": "object"}}}, {"test": "a"},
     ["field: Required value"]),
    ("required nested field",
     obj_schema(field={"type": "object", "required": ["nested"], "properties": {"nested": {}}}), {"field": {}},
     ["field.nested: Required value"]),
    ("enum with wrong types",
     obj_schema(field={"type": "object", "properties": {
         "nestedint": {"type": "integer", "enum": [1, 2]}, "nestedstring": {"type": "string", "enum": ["a", "b"]}}}),
     {"field": {"nestedint": "x", "nestedstring": True}}, [
        'field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string"',
        'field.nestedint: Unsupported value: "x": supported values: "1", "2"',
        'field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean"',
        'field.nestedstring: Unsupported value: true: supported values: "a", "b"',
    ]),
    ("maxProperties", obj_schema(fieldX={"type": "object", "maxProperties": 2}),
     {"fieldX": {"a": True, "b": True, "c": True}}, ["fieldX: Too many: 3: must have at most 2 items"]),
    ("maxItems", obj_schema(fieldX={"type": "array", "maxItems": 2}), {"fieldX": ["a", "b", "c"]},
     ["fieldX: Too many: 3: must have at most 2 items"]),
    ("maxLength", obj_schema(fieldX={"type": "string", "maxLength": 2}), {"fieldX": "abc"},
     ["fieldX: Too long: may not be more than 2 bytes"]),
    # -- the brief's examples ----------------------------------------------------------------------------
    ("maximum", SPEC, {"spec": {"name": "x", "replicas": 20}},
     ["spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"]),
    ("required", SPEC, {"spec": {}}, ["spec.name: Required value"]),
    ("enum", SPEC, {"spec": {"name": "x", "mode": "x"}},
     ['spec.mode: Unsupported value: "x": supported values: "a", "b"']),
    ("type", SPEC, {"spec": {"name": "x", "size": "string"}},
     ['spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"']),
    # -- numbers -------------------------------------------------------------------------------------------
    ("exclusiveMinimum", obj_schema(n={"type": "integer", "minimum": 0, "exclusiveMinimum": True}), {"n": 0},
     ["n: Invalid value: 0: n in body should be greater than 0"]),
    ("exclusiveMaximum float", obj_schema(n={"type": "number", "maximum": 1.5, "exclusiveMaximum": True}), {"n": 1.5},
     ["n: Invalid value: 1.5: n in body should be less than 1.5"]),
    ("bounds print as Go does", obj_schema(n={"type": "number", "maximum": 1000000}), {"n": 2500000.0},
     ["n: Invalid value: 2.5e+06: n in body should be less than or equal to 1e+06"]),
    ("whole float value", obj_schema(n={"type": "number", "minimum": 30}), {"n": 20.0},
     ["n: Invalid value: 20: n in body should be greater than or equal to 30"]),
    ("integer bound truncated", obj_schema(n={"type": "integer", "maximum": 10.5}), {"n": 11},
     ["n: Invalid value: 11: n in body should be less than or equal to 10"]),
    ("multipleOf integer", obj_schema(n={"type": "integer", "multipleOf": 3}), {"n": 10},
     ["n: Invalid value: 10: n in body should be a multiple of 3"]),
    ("multipleOf float", obj_schema(n={"type": "number", "multipleOf": 0.5}), {"n": 0.7},
     ["n: Invalid value: 0.7: n in body should be a multiple of 0.5"]),
    ("multipleOf fraction on an integer", obj_schema(n={"type": "integer", "multipleOf": 0.5}), {"n": 4},
     ["n: Invalid value: 0: factor MultipleOf declared for n must be positive: 0"]),
    ("integral float is an integer", obj_schema(n={"type": "integer", "maximum": 5}), {"n": 3.0}, []),
    ("int32 format is not checked", obj_schema(n={"type": "integer", "format": "int32"}), {"n": 2**40}, []),
    ("enum converts to the member's type", obj_schema(n={"type": "number", "enum": [1, 2]}), {"n": 2.0}, []),
    # -- strings -------------------------------------------------------------------------------------------
    ("minLength", obj_schema(s={"type": "string", "minLength": 1}), {"s": ""},
     ['s: Invalid value: "": s in body should be at least 1 chars long']),
    ("maxLength counts characters", obj_schema(s={"type": "string", "maxLength": 2}), {"s": "éé"}, []),
    ("pattern", obj_schema(s={"type": "string", "pattern": "^[a-z]+$"}), {"s": "ABC"},
     ["s: Invalid value: \"ABC\": s in body should match '^[a-z]+$'"]),
    ("pattern $ ends the text", obj_schema(s={"type": "string", "pattern": "^[a-z]+$"}), {"s": "abc\n"},
     ["s: Invalid value: \"abc\\n\": s in body should match '^[a-z]+$'"]),
    ("pattern is a search", obj_schema(s={"type": "string", "pattern": "b"}), {"s": "abc"}, []),
    # -- formats (only the registry's) ---------------------------------------------------------------------
    ("date-time", obj_schema(t={"type": "string", "format": "date-time"}), {"t": "yesterday"},
     ['t: Invalid value: "yesterday": t in body must be of type date-time: "yesterday"']),
    ("date-time ok", obj_schema(t={"type": "string", "format": "date-time"}), {"t": "2024-02-29T23:59:59.5+01:00"}, []),
    ("date out of range", obj_schema(t={"type": "string", "format": "date"}), {"t": "2023-02-29"},
     ['t: Invalid value: "2023-02-29": t in body must be of type date: "2023-02-29"']),
    ("uuid", obj_schema(u={"type": "string", "format": "uuid"}), {"u": "123"},
     ['u: Invalid value: "123": u in body must be of type uuid: "123"']),
    ("ipv4 leading zeros", obj_schema(ip={"type": "string", "format": "ipv4"}), {"ip": "010.001.0.1"}, []),
    ("ipv4", obj_schema(ip={"type": "string", "format": "ipv4"}), {"ip": "1.2.3"},
     ['ip: Invalid value: "1.2.3": ip in body must be of type ipv4: "1.2.3"']),
    ("byte", obj_schema(b={"type": "string", "format": "byte"}), {"b": "not base64!"},
     ['b: Invalid value: "not base64!": b in body must be of type byte: "not base64!"']),
    ("duration", obj_schema(d={"type": "string", "format": "duration"}), {"d": "5 minutes"}, []),
    ("unknown format ignored", obj_schema(d={"type": "string", "format": "k8s-thing"}), {"d": "?"}, []),
    ("a format on a number value", obj_schema(t={"type": "string", "format": "date-time"}), {"t": 5},
     ['t: Invalid value: "int64": t in body must be of type date-time: "int64"']),
    # -- objects -------------------------------------------------------------------------------------------
    ("additionalProperties", obj_schema(m={"type": "object", "additionalProperties": {"type": "integer"}}),
     {"m": {"a.b": "x"}}, ['m.a.b: Invalid value: "string": m.a.b in body must be of type integer: "string"']),
    ("minProperties", obj_schema(m={"type": "object", "minProperties": 2}), {"m": {"a": 1}},
     ["m: Invalid value: 1: m in body should have at least 2 properties"]),
    ("minItems", obj_schema(l={"type": "array", "minItems": 1}), {"l": []},
     ["l: Invalid value: 0: l in body should have at least 1 items"]),
    ("items path", obj_schema(l={"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
     {"l": [{"n": 1}, {"n": "x"}]}, ['l[1].n: Invalid value: "string": l[1].n in body must be of type integer: "string"']),
    ("metadata name constraint",
     obj_schema(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}),
     {"metadata": {"name": "toolong"}}, ["metadata.name: Too long: may not be more than 5 bytes"]),
    # -- combinators ---------------------------------------------------------------------------------------
    ("not", obj_schema(x={"type": "integer", "not": {"minimum": 5}}), {"x": 7},
     ['<nil>: Invalid value: "": "x" must not validate the schema (not)']),
    ("oneOf two valid", obj_schema(x={"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 10}]}), {"x": 5},
     ['<nil>: Invalid value: "": "x" must validate one and only one schema (oneOf). Found 2 valid alternatives']),
    ("oneOf none valid", obj_schema(x={"type": "integer", "oneOf": [{"minimum": 10}, {"enum": [1]}]}), {"x": 5}, [
        '<nil>: Invalid value: "": "x" must validate one and only one schema (oneOf). Found none valid',
        "x: Invalid value: 5: x in body should be greater than or equal to 10",
    ]),
    # -- malformed objects give errors, not exceptions ----------------------------------------------------
    ("root not an object", obj_schema(), "oops", ['<nil>: Invalid value: "string":  in body must be of type object: "string"']),
    ("root null", obj_schema(), None, ['<nil>: Invalid value: "null":  in body must be of type object: "null"']),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate(schema: dict[str, Any], obj: Any, want: list[str]) -> None:
    assert errors(schema, obj) == sorted(want)


LIST_SCHEMA = obj_schema(
    tags={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    nums={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
    objs={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "x-kubernetes-map-type": "atomic",
                                                                      "x-kubernetes-preserve-unknown-fields": True}},
    ports={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
           "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
    pairs={"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
           "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
    nested={"type": "object", "additionalProperties": {
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}},
)  # fmt: skip

LIST_CASES = [
    ("set", {"tags": ["a", "b", "a", "a", "b"]},
     ['tags[2]: Duplicate value: "a"', 'tags[4]: Duplicate value: "b"']),
    ("set of numbers: 1 and 1.0 differ", {"nums": [1, 1.0, 2.5, 2.5]}, ["nums[3]: Duplicate value: 2.5"]),
    ("set of objects", {"objs": [{"a": 1}, {"a": 1}]},
     ['objs[1]: Duplicate value: map[string]interface {}{"a":1}']),
    ("map", {"ports": [{"port": 80}, {"port": 443}, {"port": 80}]},
     ['ports[2]: Duplicate value: map[string]interface {}{"port":80}']),
    ("map without keys", {"ports": [{}, {}]}, ["ports[1]: Duplicate value: map[string]interface {}{}"]),
    ("map with several keys", {"pairs": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]},
     ['pairs[2]: Duplicate value: map[string]interface {}{"a":"x", "b":1}']),
    ("map item not an object", {"ports": [{"port": 1}, 5]}, [
        "ports[1]: Invalid value: 5: must be an object for an array of list-type map",
        'ports[1]: Invalid value: "integer": ports[1] in body must be of type object: "integer"',
    ]),
    ("under additionalProperties", {"nested": {"k": ["x", "x"]}}, ['nested[k][1]: Duplicate value: "x"']),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_list_types(obj: Any, want: list[str]) -> None:
    assert errors(LIST_SCHEMA, obj) == sorted(want)


EMBEDDED = obj_schema(
    e={"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
    m={"type": "object", "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": True,
                                                  "x-kubernetes-preserve-unknown-fields": True}},
)  # fmt: skip

EMBEDDED_CASES = [
    ("valid", {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}, []),
    ("typemeta required", {"e": {}},
     ["e.apiVersion: Required value: must not be empty", "e.kind: Required value: must not be empty"]),
    ("bad typemeta", {"e": {"apiVersion": "a/b/c", "kind": "Pod_x"}}, [
        'e.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
        'e.kind: Invalid value: "Pod_x": may have mixed case, but should otherwise match: a DNS-1035 label must '
        "consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with "
        "an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]),
    ("typemeta not strings", {"e": {"apiVersion": 1, "kind": ""}},
     ["e.apiVersion: Invalid value: 1: must be a string", 'e.kind: Invalid value: "": must not be empty']),
    ("metadata name", {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}}},
     ["e.metadata.name: Invalid value: \"a/b\": may not contain '/'"]),
    ("metadata type", {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}},
     ["e.metadata: Invalid value: map[string]interface {}{\"name\":5}: json: cannot unmarshal number into Go "
      "struct field ObjectMeta.name of type string"]),
    ("under additionalProperties", {"m": {"k": {"kind": "X"}}}, ["m[k].apiVersion: Required value: must not be empty"]),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in EMBEDDED_CASES], ids=[c[0] for c in EMBEDDED_CASES])
def test_embedded_resources(obj: Any, want: list[str]) -> None:
    assert errors(EMBEDDED, obj) == sorted(want)


def test_malformed_schema_does_not_raise() -> None:
    schema = {"type": "object", "properties": {"a": "nope", "b": {"items": [1], "enum": 5, "maximum": "x"}},
              "required": "a", "allOf": {"x": 1}}  # fmt: skip
    assert SchemaValidator(schema).validate({"a": 1, "b": [1, {"x": None}]}) == []


# --- ratcheting ---------------------------------------------------------------------------------------------

RATCHET = obj_schema(
    kind={"type": "string", "enum": ["Good"]},
    spec={"type": "object", "properties": {
        "small": {"type": "number", "maximum": 50},
        "other": {"type": "number", "maximum": 50},
        "atomic": {"type": "array", "items": {"type": "integer", "maximum": 5}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "port": {"type": "integer", "maximum": 100}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
        "e": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
    }},
)  # fmt: skip

RATCHET_CASES = [
    ("unchanged invalid value kept", {"spec": {"small": 500}}, {"spec": {"small": 500, "other": 1}}, []),
    ("changed invalid value", {"spec": {"small": 500}}, {"spec": {"small": 501}},
     ["spec.small: Invalid value: 500: spec.small in body should be less than or equal to 50"]),
    ("new invalid field", {"spec": {"small": 500, "other": 60}}, {"spec": {"small": 500}},
     ["spec.other: Invalid value: 60: spec.other in body should be less than or equal to 50"]),
    ("list-map items correlate by key", {"spec": {"ports": [{"name": "b", "port": 1}, {"name": "a", "port": 200}]}},
     {"spec": {"ports": [{"name": "a", "port": 200}]}}, []),
    ("list-map item changed", {"spec": {"ports": [{"name": "a", "port": 201}]}},
     {"spec": {"ports": [{"name": "a", "port": 200}]}},
     ["spec.ports[0].port: Invalid value: 201: spec.ports[0].port in body should be less than or equal to 100"]),
    ("atomic list items do not correlate", {"spec": {"atomic": [9, 1]}}, {"spec": {"atomic": [9, 2]}},
     ["spec.atomic[0]: Invalid value: 9: spec.atomic[0] in body should be less than or equal to 5"]),
    ("unchanged atomic list", {"spec": {"atomic": [9, 1]}}, {"spec": {"atomic": [9, 1]}}, []),
    ("map keys correlate", {"spec": {"labels": {"a": "long", "b": "x"}}}, {"spec": {"labels": {"a": "long"}}}, []),
    ("an unchanged object is not checked", {"kind": "Bad", "spec": {"small": 99}}, {"kind": "Bad", "spec": {"small": 99}},
     []),
    ("root kind is not ratcheted on its own", {"kind": "Bad", "spec": {}}, {"kind": "Bad"},
     ['kind: Unsupported value: "Bad": supported values: "Good"']),
    ("duplicates allowed when the old object had them", {"spec": {"tags": ["a", "a", "b", "b"]}},
     {"spec": {"tags": ["a", "a"]}}, []),
    ("duplicates new", {"spec": {"tags": ["b", "b"]}}, {"spec": {"tags": ["a"]}}, ['spec.tags[1]: Duplicate value: "b"']),
    ("embedded resources always checked", {"spec": {"e": {}}}, {"spec": {"e": {}}},
     ["spec.e.apiVersion: Required value: must not be empty", "spec.e.kind: Required value: must not be empty"]),
]  # fmt: skip


@pytest.mark.parametrize(("new", "old", "want"), [c[1:] for c in RATCHET_CASES], ids=[c[0] for c in RATCHET_CASES])
def test_validate_update_ratchets(new: Any, old: Any, want: list[str]) -> None:
    got = sorted(str(e) for e in SchemaValidator(RATCHET).validate_update(new, old))
    assert got == sorted(want)


def test_ratcheting_does_not_reach_into_combinator_branches() -> None:
    schema = obj_schema(spec={"type": "object", "properties": {"a": {"type": "integer"}},
                              "allOf": [{"properties": {"a": {"maximum": 5}}}]})  # fmt: skip
    old, new = {"spec": {"a": 9, "b": 1}}, {"spec": {"a": 9, "b": 2}}
    assert [str(e) for e in SchemaValidator(schema).validate_update(new, old)] == [
        "spec.a: Invalid value: 9: spec.a in body should be less than or equal to 5",
        '<nil>: Invalid value: "": "spec" must validate all the schemas (allOf). None validated',
    ]


# --- a value generated to fit a schema validates with no errors ---------------------------------------------

FORMAT_VALUES: dict[str, st.SearchStrategy[str]] = {
    "uuid": st.uuids().map(str),
    "date": st.dates(min_value=datetime.date(1000, 1, 1)).map(datetime.date.isoformat),
    "date-time": st.datetimes(min_value=datetime.datetime(1000, 1, 1)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "cidr": st.ip_addresses(v=4).map(lambda ip: f"{ip}/24"),
    "byte": st.binary(min_size=1, max_size=20).map(lambda b: base64.b64encode(b).decode()),
    "hostname": st.from_regex(r"\A[a-z][a-z0-9]{0,10}(\.[a-z]{2,5}){0,2}\Z"),
    "email": st.from_regex(r"\A[a-z0-9.]{0,5}[a-z]@[a-z]{1,5}\.[a-z]{2,3}\Z").filter(lambda s: ".." not in s and s[0] != "."),
    "mac": st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b)),
    "duration": st.from_regex(r"\A[0-9]{1,3}(h|m|s|ms|us)\Z"),
    "uri": st.from_regex(r"\Ahttps?://[a-z]{1,8}\.[a-z]{2,3}(/[a-z0-9]{1,5}){0,3}\Z"),
    "int32": st.text(max_size=5),  # not a string format the registry knows: anything goes
}  # fmt: skip
NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string"}
    kind = draw(st.sampled_from(["plain", "length", "enum", "pattern", "format"]))
    if kind == "length":
        s["minLength"] = draw(st.integers(0, 3))
        s["maxLength"] = s["minLength"] + draw(st.integers(0, 5))
    elif kind == "enum":
        s["enum"] = draw(st.lists(st.text(max_size=4), min_size=1, max_size=4, unique=True))
    elif kind == "pattern":
        s["pattern"] = "^[a-z][-a-z0-9]*$"
    elif kind == "format":
        s["format"] = draw(st.sampled_from(sorted(FORMAT_VALUES)))
    return s


@st.composite
def number_schemas(draw: st.DrawFn) -> dict[str, Any]:
    s: dict[str, Any] = {"type": draw(st.sampled_from(["integer", "number"]))}
    lo = draw(st.integers(-1000, 1000))
    step = draw(st.integers(1, 5)) if s["type"] == "integer" and draw(st.booleans()) else 0
    if draw(st.booleans()):
        s["minimum"], s["exclusiveMinimum"] = lo, draw(st.booleans())
    if draw(st.booleans()):
        s["maximum"], s["exclusiveMaximum"] = lo + 2 * step + draw(st.integers(2, 100)), draw(st.booleans())
    if step:
        s["multipleOf"] = step
    return s


def scalar_schemas() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        string_schemas(),
        number_schemas(),
        st.just({"type": "boolean"}),
        st.just({"x-kubernetes-int-or-string": True}),
    )


def _nullable(s: dict[str, Any], draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 4)) == 0:
        s["nullable"] = True
    return s


def composite_schemas(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        kind = draw(st.sampled_from(["object", "map", "array", "set", "listmap"]))
        if kind == "object":
            props = draw(st.dictionaries(NAMES, children, min_size=1, max_size=4))
            required = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
            return _nullable({"type": "object", "properties": props, "required": required}, draw)
        if kind == "map":
            return {"type": "object", "additionalProperties": draw(children), "maxProperties": draw(st.integers(0, 4))}
        if kind == "array":
            lo = draw(st.integers(0, 2))
            return {"type": "array", "items": draw(children), "minItems": lo, "maxItems": lo + draw(st.integers(0, 3))}
        if kind == "set":
            return {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 5}}
        item = {"type": "object", "required": ["k"],
                "properties": {"k": {"type": "string"}, "v": draw(children)}}  # fmt: skip
        return {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": item}

    return build()


SCHEMAS = st.recursive(scalar_schemas(), composite_schemas, max_leaves=8)
ROOT_SCHEMAS = st.dictionaries(NAMES, SCHEMAS, min_size=1, max_size=4).map(lambda p: obj_schema(**p))


def values(s: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that fit schema s (one of the shapes the strategies above generate)."""
    base = _values(s)
    return st.one_of(st.none(), base) if s.get("nullable") else base


def _values(s: dict[str, Any]) -> st.SearchStrategy[Any]:
    t = s.get("type")
    if s.get("x-kubernetes-int-or-string"):
        return st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=5))
    if t == "boolean":
        return st.booleans()
    if t == "string":
        if "enum" in s:
            return st.sampled_from(s["enum"])
        if "pattern" in s:
            return st.from_regex(r"\A[a-z][-a-z0-9]{0,8}\Z")
        if "format" in s:
            return FORMAT_VALUES[s["format"]]
        return st.text(min_size=s.get("minLength", 0), max_size=s.get("maxLength", 8))
    if t in ("integer", "number"):
        lo, hi = s.get("minimum", -(10**6)), s.get("maximum", 10**6)
        lo, hi = lo + bool(s.get("exclusiveMinimum")), hi - bool(s.get("exclusiveMaximum"))
        m = s.get("multipleOf", 1)
        ints = st.integers(math.ceil(lo / m), math.floor(hi / m)).map(lambda k: k * m)
        if t == "integer":
            return ints
        return st.one_of(ints, st.floats(lo, hi, allow_nan=False))
    if t == "array":
        if s.get("x-kubernetes-list-type") == "set":
            return st.lists(st.text(max_size=5), unique=True, max_size=4)
        if s.get("x-kubernetes-list-type") == "map":
            item = s["items"]
            return st.lists(values(item), max_size=4, unique_by=lambda x: x["k"] if x else None)
        return st.lists(values(s["items"]), min_size=s["minItems"], max_size=s["maxItems"])
    if "additionalProperties" in s:
        return st.dictionaries(st.text(max_size=4), values(s["additionalProperties"]), max_size=s["maxProperties"])
    props = s.get("properties", {})
    required = set(s.get("required", []))
    return st.fixed_dictionaries(
        {k: values(p) for k, p in props.items() if k in required},
        optional={k: values(p) for k, p in props.items() if k not in required},
    )


@st.composite
def schemas_and_values(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(ROOT_SCHEMAS)
    return schema, draw(values(schema))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_values())
def test_a_value_fitting_its_schema_validates(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    validator = SchemaValidator(schema)
    assert validator.validate(value) == []
    assert validator.validate_update(value, value) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NAMES | st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROOT_SCHEMAS | st.dictionaries(NAMES, JSON), JSON, JSON)
def test_any_value_gives_errors_not_exceptions(schema: dict[str, Any], new: Any, old: Any) -> None:
    validator = SchemaValidator(schema)
    for err in [*validator.validate(new), *validator.validate_update(new, old)]:
        assert str(err)
