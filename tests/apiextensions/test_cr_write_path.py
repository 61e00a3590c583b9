"""The custom resource write path's shortcuts against the walks they stand in for: pruning, null-dropping and
defaulting in one walk (defaulting.prune_and_default) equals the three in turn; the generated validity
predicate (fastcheck) never passes an object the full validation walk has errors for, and passes the objects
that fit; a create's CEL rules checked by shortcut give what the full evaluation gives."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyk8s.apiextensions.schema.cel_validation import RuleValidator
from pyk8s.apiextensions.schema.defaulting import default, prune_and_default
from pyk8s.apiextensions.schema.listtype import validate_lists
from pyk8s.apiextensions.schema.objectmeta import validate_embedded
from pyk8s.apiextensions.schema.pruning import prune, prune_non_nullable_nulls
from pyk8s.apiextensions.schema.validation import SchemaValidator

from .test_schema_validation import JSON, SCHEMAS, schemas_and_values

# -- prune_and_default ------------------------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "apiVersion", "kind", "metadata"])
_SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x"]) | st.just(1.5)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_NAMES | st.sampled_from(["d", "e"]), inner, max_size=4)
    ),
    max_leaves=12,
)


def _with_extras(s: dict[str, Any], draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 3)) == 0:
        s["default"] = draw(_VALUES)  # of any shape: pruned, and copied in as it is
    if draw(st.integers(0, 3)) == 0:
        s["nullable"] = True
    return s


def _structural(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        kind = draw(st.sampled_from(["object", "map", "array", "preserve", "embedded", "open"]))
        if kind in ("object", "embedded", "preserve"):
            s: dict[str, Any] = {"type": "object", "properties": draw(st.dictionaries(_NAMES, children, max_size=4))}
            if kind == "embedded":
                s["x-kubernetes-embedded-resource"] = True
            if kind == "preserve":
                s["x-kubernetes-preserve-unknown-fields"] = True
        elif kind == "map":
            s = {"type": "object", "additionalProperties": draw(children | st.just(True))}
        elif kind == "array":
            s = {"type": "array", "items": draw(children)}
        else:
            s = {"type": "object"}
        return _with_extras(s, draw)

    return build()


@st.composite
def _scalar_schema(draw: st.DrawFn) -> dict[str, Any]:
    return _with_extras({"type": draw(st.sampled_from(["string", "integer", "boolean"]))}, draw)


_STRUCTURAL = st.recursive(_scalar_schema(), _structural, max_leaves=8)
_ROOTS = st.dictionaries(_NAMES, _STRUCTURAL, max_size=4).map(lambda p: {"type": "object", "properties": p})


_STR_DEFAULT = {"type": "string", "default": "x"}
_CASES = [
    # a null map value with a default is filled, one without is dropped, a nullable one kept
    ({"m": {"type": "object", "additionalProperties": _STR_DEFAULT}}, {"m": {"a": None, "b": "y"}}),
    ({"m": {"type": "object", "additionalProperties": {"type": "string"}}}, {"m": {"a": None}}),
    ({"m": {"type": "object", "additionalProperties": {"type": "string", "nullable": True}}}, {"m": {"a": None}}),
    # an embedded resource's metadata: not pruned, but its nulls and defaults as anywhere
    ({"e": {"type": "object", "x-kubernetes-embedded-resource": True, "additionalProperties": _STR_DEFAULT}},
     {"e": {"metadata": None, "kind": None, "apiVersion": {"x": None}, "other": None}}),
    ({"e": {"type": "object", "x-kubernetes-embedded-resource": True,
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
     {"e": {"metadata": {"name": None, "zzz": 1}, "kind": "K", "other": 1}}),
    # defaults inside defaults, items filled, unknown fields below a list, preserved fields kept
    ({"o": {"type": "object", "default": {}, "properties": {"a": {"type": "object", "default": {"z": 1},
                                                                  "properties": {"b": _STR_DEFAULT}}}}}, {}),
    ({"l": {"type": "array", "items": {"type": "object", "default": {"q": 1}, "properties": {"p": _STR_DEFAULT}}}},
     {"l": [None, {"u": 1}, [1], {"p": None}]}),
    ({"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"d": {"type": "object", "properties": {"k": _STR_DEFAULT}}}}},
     {"p": {"u": {"v": 1}, "d": {"k": None, "w": 2}}}),
    ({"s": {"type": "string"}}, {"s": None, "apiVersion": "v", "kind": None, "metadata": {"x": None}, "extra": {}}),
]  # fmt: skip


@pytest.mark.parametrize(("props", "obj"), _CASES)
def test_prune_and_default_cases(props: dict[str, Any], obj: dict[str, Any]) -> None:
    test_prune_and_default_equals_the_three_walks.hypothesis.inner_test({"type": "object", "properties": props}, obj)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_ROOTS, obj=st.dictionaries(_NAMES | st.just("d"), _VALUES, max_size=5))
def test_prune_and_default_equals_the_three_walks(schema: dict[str, Any], obj: dict[str, Any]) -> None:
    three = copy.deepcopy(obj)
    pruned = prune(three, schema, is_resource_root=True)
    prune_non_nullable_nulls(three, schema)
    default(three, schema)
    one = copy.deepcopy(obj)
    assert prune_and_default(one, schema) == pruned
    assert orjson.dumps(one) == orjson.dumps(three)  # key order included


# -- the validity predicate -------------------------------------------------------------------------------------


def _full_walk_errors(validator: SchemaValidator, obj: Any) -> list[str]:
    errs = validator.value_errors(obj)
    errs += validate_embedded("", obj, validator._structural, False)
    errs += validate_lists(obj, validator._structural)
    return [str(e) for e in errs]


@st.composite
def _keyword_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Schemas with the keywords the predicate leaves to the walk, or handles with care."""
    base = draw(SCHEMAS)
    kind = draw(st.sampled_from(["allOf", "anyOf", "oneOf", "not", "bounds", "multiple", "enum", "closed", "props",
                                 "unique", "format", "plain"]))  # fmt: skip
    if kind in ("allOf", "anyOf", "oneOf"):
        return {kind: draw(st.lists(SCHEMAS, min_size=1, max_size=2)), **base}
    if kind == "not":
        return {"not": draw(SCHEMAS), **base}
    if kind == "bounds":
        return {**base, "minimum": draw(st.sampled_from([0.5, -1.5, 0, 1, 2**63, -(2**64)])),
                "exclusiveMinimum": draw(st.booleans()), "maximum": draw(st.sampled_from([2.5, 1e300, 3])),
                "exclusiveMaximum": draw(st.booleans())}  # fmt: skip
    if kind == "multiple":
        return {**base, "multipleOf": draw(st.sampled_from([0.5, 2, -1, 0, 1e-3, 2.0**70]))}
    if kind == "enum":
        return {**base, "enum": draw(st.lists(st.sampled_from([1, 1.0, 1.5, "a", "", None, True, [1], {"a": 1}]),
                                              min_size=1, max_size=4))}  # fmt: skip
    if kind == "closed":
        return {**base, "additionalProperties": False}
    if kind == "props":
        return {**base, "minProperties": 1, "maxProperties": 2}
    if kind == "unique":
        return {**base, "uniqueItems": True}
    if kind == "format":
        return {**base, "format": draw(st.sampled_from(["int32", "date-time", "byte", "float", "uuid"]))}
    return base


# values at the bounds and multiples the schemas above use, and beyond int64
_EDGES = st.sampled_from([0, 1, 2, 3, -1, -2, 0.5, 1.0, 2.5, 3.0, 2**63, -(2**63) - 1, 2**64, "", "a", True])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    props=st.dictionaries(st.sampled_from(["a", "b", "c"]), _keyword_schemas() | SCHEMAS, min_size=1, max_size=3),
    objs=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _EDGES | JSON, max_size=3), max_size=4),
)
def test_the_predicate_passes_nothing_the_walk_has_errors_for(props: dict[str, Any], objs: list[Any]) -> None:
    validator = SchemaValidator({"type": "object", "properties": props, "required": sorted(props)[:1]})
    for obj in objs:
        if validator._valid(obj):
            assert _full_walk_errors(validator, obj) == [], obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_values(), st.data())
def test_fitting_objects_pass_the_predicate_and_near_misses_are_walked(
    case: tuple[dict[str, Any], Any], data: st.DataObject
) -> None:
    schema, value = case
    validator = SchemaValidator(schema)
    assert validator._valid(value)
    # one field changed to anything: passed only when the walk finds nothing either
    if isinstance(value, dict) and value:
        changed = {**value, data.draw(st.sampled_from(sorted(value))): data.draw(JSON)}
        if validator._valid(changed):
            assert _full_walk_errors(validator, changed) == []
        assert _outcome(validator.validate, changed) == _outcome(
            lambda x: validator.value_errors(x) + validate_lists(x, validator._structural), changed
        )


def _outcome(fn: Any, obj: Any) -> Any:
    try:
        return [str(e) for e in fn(obj)]
    except ValueError as err:  # a float JSON cannot write, in a set: as before
        return repr(err)


# -- a create's CEL rules ---------------------------------------------------------------------------------------

_RULES_SCHEMA = {
    "type": "object",
    "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec is required"}],
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
                {"rule": "!has(self.mode) || self.mode != 'Off' || self.replicas == 0", "reason": "FieldValueForbidden"},
                {"rule": "self.replicas == oldSelf.replicas"},  # a transition rule: not evaluated on create
            ],
            "properties": {
                "replicas": {"type": "integer"},
                "minReplicas": {"type": "integer"},
                "mode": {"type": "string"},
                "tier": {"type": "object", "x-kubernetes-validations": [{"rule": "size(self.name) <= 5"}],
                         "properties": {"name": {"type": "string"}}},
            },
        },
    },
}  # fmt: skip
_specs = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.integers(-1, 3) | st.sampled_from([1.5, "3", None, 1 << 64]),
        "minReplicas": st.integers(-1, 3) | st.none(),
        "mode": st.sampled_from(["Off", "On", 3]),
        "tier": st.fixed_dictionaries({}, optional={"name": st.sampled_from(["", "abcdef", 5])}) | st.just([]),
    },
)


@settings(max_examples=300, deadline=None)
@given(obj=st.fixed_dictionaries({}, optional={"spec": _specs | st.just("x")}))
def test_a_creates_rules_checked_by_shortcut_give_the_full_evaluations_result(obj: dict[str, Any]) -> None:
    rules = RuleValidator(_RULES_SCHEMA)
    assert rules._sites is not None  # every rule a create evaluates has a shortcut
    full = RuleValidator(_RULES_SCHEMA)
    full._sites = None
    assert [str(e) for e in rules.validate(obj)] == [str(e) for e in full.validate(obj)]
