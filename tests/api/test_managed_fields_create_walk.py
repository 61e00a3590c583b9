"""A create's managedFields in one walk (record_create) against the two-step rule it replaces: the field set of
every leaf (`fieldset`), then `"."` on the nodes absent from the kind's zero value (`with_added_nodes`), in
the same key order, for custom resources (a CRD's schema, values of any shape) and built-in kinds."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api import managed_fields
from pyk8s.api.managed_fields import fieldset, record_create, with_added_nodes
from pyk8s.api.schema import Node, kind_node
from pyk8s.api.types.codec import codec_for

_CR_SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "image": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "resources": {"type": "object", "properties": {"cpu": {"x-kubernetes-int-or-string": True}}},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "pairs": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["b", "a"],
                    "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "atomic": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "properties": {"x": {"type": "string"}},
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    },
}
CR = Node.of(_CR_SCHEMA)
CR_ZERO = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}

_leaves = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "a", "b"]), st.just(1.5))
_json = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "name", "x"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_ports = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["http", "grpc", 'q"uote', "a-b", "é\t", "\\"])},
            optional={"port": st.integers(1, 3)},
        ),
        st.fixed_dictionaries({}, optional={"port": st.integers(1, 3)}),  # no key: the list is owned whole
        _json,
    ),
    max_size=3,
)
_pairs = st.lists(
    st.fixed_dictionaries({"a": st.sampled_from(["x", "y"]), "b": st.integers(0, 1)}, optional={"c": _leaves}),
    max_size=3,
)
_spec = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.one_of(st.integers(0, 3), _json),
        "image": _leaves,
        "labels": st.one_of(st.dictionaries(st.sampled_from(["app", "tier"]), _leaves, max_size=2), _json),
        "resources": st.one_of(st.fixed_dictionaries({}, optional={"cpu": st.sampled_from(["1", 2])}), _json),
        "ports": st.one_of(_ports, _json),
        "pairs": _pairs,
        "tags": st.lists(st.one_of(st.sampled_from(["a", "b"]), _json), max_size=3),
        "args": st.lists(_leaves, max_size=2),
        "atomic": st.one_of(st.fixed_dictionaries({}, optional={"x": _leaves}), _json),
        "free": _json,
        "unknown": _json,
    },
)
_objects = st.fixed_dictionaries(
    {"apiVersion": st.just("example.com/v1"), "kind": st.just("Widget"),
     "metadata": st.fixed_dictionaries({"name": st.just("w")}, optional={
         "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2),
         "annotations": st.dictionaries(st.sampled_from(["a"]), st.just("x"), max_size=1),
         "finalizers": st.lists(st.sampled_from(["x/a", "x/b"]), max_size=2),
         "uid": st.just("u"), "namespace": st.just("ns")})},
    optional={"spec": st.one_of(_spec, _json), "status": st.one_of(st.fixed_dictionaries({}, optional={"ready": st.integers(0, 2)}), _json),
              "extra": _json},
)  # fmt: skip


def _two_step(obj: dict, node: Node, zero: dict) -> dict | None:
    fields = fieldset(obj, node)
    return with_added_nodes(fields, zero) if fields else None


def _fields_v1(obj: dict) -> dict | None:
    entries = obj["metadata"].get("managedFields")
    return entries[0]["fieldsV1"] if entries else None


@settings(max_examples=400, deadline=None)
@given(obj=_objects)
def test_a_custom_resources_create_equals_the_two_step_rule(obj: dict) -> None:
    expected = _two_step(orjson.loads(orjson.dumps(obj)), CR, CR_ZERO)
    record_create(obj, CR, "m", "example.com/v1", CR_ZERO)
    assert orjson.dumps(_fields_v1(obj)) == orjson.dumps(expected)


_pods = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod"), "metadata": st.fixed_dictionaries({"name": st.just("p")}, optional={
        "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2)})},
    optional={"spec": st.fixed_dictionaries({}, optional={
        "containers": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b"])}, optional={
            "image": st.just("x"), "ports": st.lists(st.fixed_dictionaries({"containerPort": st.sampled_from([80, 81])},
                                                                              optional={"protocol": st.just("UDP")}), max_size=2),
            "env": st.lists(st.fixed_dictionaries({"name": st.just("E")}, optional={"value": st.just("v")}), max_size=2)}),
            max_size=2),
        "nodeName": st.just("n"), "tolerations": st.lists(st.fixed_dictionaries({"key": st.just("k")}), max_size=1),
        "securityContext": st.fixed_dictionaries({}, optional={"runAsUser": st.just(1)})}),
        "status": st.fixed_dictionaries({}, optional={"phase": st.just("Running")})},
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(obj=_pods, memo=st.booleans())
def test_a_built_in_kinds_create_equals_the_two_step_rule(obj: dict, memo: bool) -> None:
    """Pods: a zero value with a spec of its own (`containers: null`), list items keyed by two fields with a
    default, and the spec's memo, used or not."""
    node = kind_node("", "v1", "Pod")
    zero = codec_for("", "v1", "Pod").decoder.zero()
    expected = _two_step(orjson.loads(orjson.dumps(obj)), node, zero)
    saved = managed_fields._memo_pays
    managed_fields._memo_pays = lambda plan, key: memo  # type: ignore[assignment]
    try:
        record_create(obj, node, "m", "v1", zero)
    finally:
        managed_fields._memo_pays = saved  # type: ignore[assignment]
    assert orjson.dumps(_fields_v1(obj)) == orjson.dumps(expected)


def test_sections_that_do_not_repeat_stop_going_through_the_memo() -> None:
    """Specs that differ from create to create are walked, not looked up (their canonical JSON would be wasted);
    repeated ones keep the memo."""
    managed_fields._MEMO_USE.clear()
    for i in range(200):
        obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": f"w{i}"}, "spec": {"replicas": i}}
        record_create(obj, CR, "m", "example.com/v1", CR_ZERO)
        assert _fields_v1(obj) == {"f:spec": {".": {}, "f:replicas": {}}}
    spec = CR.child("spec")
    assert spec is not None and not managed_fields._memo_pays(managed_fields._plan(spec), "f:spec")
    managed_fields._MEMO_USE.clear()
    for i in range(200):
        obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": f"w{i}"}, "spec": {"replicas": 1}}
        record_create(obj, CR, "m", "example.com/v1", CR_ZERO)
    assert managed_fields._memo_pays(managed_fields._plan(spec), "f:spec")
