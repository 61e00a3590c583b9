"""x-kubernetes-validations: what a custom resource's create or update is told (messages, reasons, fieldPath,
transition rules, messageExpression, ratcheting) and what a CRD with a broken rule is told, in upstream's words
(apiextensions-apiserver pkg/apiserver/schema/cel validation_test.go and the CRD validation tests)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.apiextensions.schema.cel_validation import RuleValidator, rules_checker

SCHEMA_PATH = "spec.validation.openAPIV3Schema"


def spec_schema(props: dict[str, Any], rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    spec = {"type": "object", "properties": props, "x-kubernetes-validations": rules, **extra}
    return {"type": "object", "properties": {"spec": spec}}


def errors(schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in RuleValidator(schema).validate(obj, old)]


def compile_errors(schema: dict[str, Any]) -> list[str]:
    return [str(e) for e in RuleValidator(schema).compile_errors(SCHEMA_PATH)]


REPLICAS = {
    "minReplicas": {"type": "integer"},
    "replicas": {"type": "integer"},
    "maxReplicas": {"type": "integer"},
}
RANGE_RULE = "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas"


# -- messages and reasons -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"rule": RANGE_RULE}, f'spec: Invalid value: "object": failed rule: {RANGE_RULE}'),
        ({"rule": RANGE_RULE, "message": " out of range "}, 'spec: Invalid value: "object": out of range'),
        ({"rule": RANGE_RULE, "reason": "FieldValueForbidden", "message": "no"}, "spec: Forbidden: no"),
        ({"rule": RANGE_RULE, "reason": "FieldValueRequired", "message": "need"}, "spec: Required value: need"),
        ({"rule": RANGE_RULE, "reason": "FieldValueDuplicate", "message": "dup"}, 'spec: Duplicate value: "object"'),
        ({"rule": RANGE_RULE, "fieldPath": ".replicas"}, f'spec.replicas: Invalid value: "object": failed rule: {RANGE_RULE}'),
        ({"rule": RANGE_RULE, "messageExpression": "'replicas ' + string(self.replicas) + ' is too many'"},
         'spec: Invalid value: "object": replicas 7 is too many'),
        # a messageExpression that fails, is empty or has line breaks falls back to the message
        ({"rule": RANGE_RULE, "messageExpression": "string(self.replicas / 0)", "message": "fallback"},
         'spec: Invalid value: "object": fallback'),
        ({"rule": RANGE_RULE, "messageExpression": "'  '"}, f'spec: Invalid value: "object": failed rule: {RANGE_RULE}'),
        ({"rule": RANGE_RULE, "messageExpression": "'a\\nb'", "message": "m"}, 'spec: Invalid value: "object": m'),
    ],
)  # fmt: skip
def test_failure_messages_and_reasons(rule, expected):
    obj = {"spec": {"minReplicas": 1, "replicas": 7, "maxReplicas": 5}}
    assert errors(spec_schema(REPLICAS, [rule]), obj) == [expected]


def test_passing_rule_and_absent_value_report_nothing():
    schema = spec_schema(REPLICAS, [{"rule": RANGE_RULE}])
    assert errors(schema, {"spec": {"minReplicas": 1, "replicas": 3, "maxReplicas": 5}}) == []
    assert errors(schema, {"metadata": {"name": "x"}}) == []  # rules run only where a value is present


def test_rules_at_every_node_in_upstream_order():
    item = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}},
            "x-kubernetes-validations": [{"rule": "self.name.startsWith('a')", "message": "bad name"}]}  # fmt: skip
    schema = spec_schema(
        {"items": {"type": "array", "maxItems": 10, "items": item},
         "labels": {"type": "object", "maxProperties": 5,
                    "additionalProperties": {"type": "string", "maxLength": 5,
                                             "x-kubernetes-validations": [{"rule": "self != 'x'"}]}}},
        [{"rule": "self.items.size() < 2", "message": "too many"}],
    )  # fmt: skip
    obj = {"spec": {"items": [{"name": "b"}, {"name": "a"}, {"name": "c"}], "labels": {"k": "x"}}}
    assert errors(schema, obj) == [
        'spec: Invalid value: "object": too many',
        'spec.items[0]: Invalid value: "object": bad name',
        'spec.items[2]: Invalid value: "object": bad name',
        "spec.labels[k]: Invalid value: \"string\": failed rule: self != 'x'",
    ]


def test_root_rule_sees_name_but_not_labels():
    schema = {"type": "object", "properties": {"spec": {"type": "object"}},
              "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('x') && self.kind == 'K'"}]}  # fmt: skip
    obj = {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "y", "labels": {"a": "b"}}, "spec": {}}
    assert errors(schema, obj) == [
        "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('x') && self.kind == 'K'"
    ]
    schema["x-kubernetes-validations"] = [{"rule": "has(self.metadata.labels)"}]
    assert "undefined field 'labels'" in compile_errors(schema)[0]


def test_escaped_names_formats_and_numbers():
    props = {
        "foo-bar": {"type": "integer"},
        "namespace": {"type": "string"},
        "ratio": {"type": "number"},
        "when": {"type": "string", "format": "date-time"},
        "timeout": {"type": "string", "format": "duration"},
        "data": {"type": "string", "format": "byte"},
    }
    rule = (
        "self.foo__dash__bar == 1 && self.__namespace__ == 'ns' && self.ratio + 0.5 == 2.5"
        " && self.when < timestamp('2030-01-01T00:00:00Z') && self.timeout > duration('1m') && self.data == b'hi'"
    )
    obj = {"spec": {"foo-bar": 1, "namespace": "ns", "ratio": 2, "when": "2024-01-01T00:00:00Z", "timeout": "1h",
                    "data": "aGk="}}  # fmt: skip
    assert errors(spec_schema(props, [{"rule": rule}]), obj) == []


def test_runtime_errors():
    props = {"a": {"type": "integer"}, "b": {"type": "object", "properties": {"c": {"type": "string"}}},
             "v": {"x-kubernetes-int-or-string": True}}  # fmt: skip
    rules = [{"rule": "self.b.c == 'x'"}, {"rule": "self.a / 0 == 1"}, {"rule": "self.v > 1", "message": "v"}]
    assert errors(spec_schema(props, rules), {"spec": {"a": 1, "b": {}, "v": "abc"}}) == [
        "spec: Invalid value: \"object\": no such key: c evaluating rule: self.b.c == 'x'",
        'spec: Invalid value: "object": division by zero evaluating rule: self.a / 0 == 1',
        "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator,"
        " function or macro signature for rule: v",
    ]


# -- transition rules ---------------------------------------------------------------------------------------------

NO_SCALE_DOWN = {"rule": "self.replicas >= oldSelf.replicas", "message": "no scale down"}


def test_transition_rule_runs_only_on_update():
    schema = spec_schema(REPLICAS, [NO_SCALE_DOWN])
    assert errors(schema, {"spec": {"replicas": 1}}) == []
    assert errors(schema, {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}) == [
        'spec: Invalid value: "object": no scale down'
    ]
    # no old value at this node: the rule does not run
    assert errors(schema, {"spec": {"replicas": 1}}, {"metadata": {}}) == []


def test_list_map_items_correlate_by_key():
    item = {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 10}, "port": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}  # fmt: skip
    schema = spec_schema(
        {"ports": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": ["name"], "items": item}}, [])  # fmt: skip
    new = {"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]}}
    old = {"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 3}]}}
    assert errors(schema, new, old) == ['spec.ports[0]: Invalid value: "object": port is immutable']


def test_set_and_map_lists_compare_unordered_in_transition_rules():
    tags = {
        "type": "array",
        "maxItems": 5,
        "x-kubernetes-list-type": "set",
        "items": {"type": "string", "maxLength": 5},
    }
    schema = spec_schema({"tags": tags}, [{"rule": "self.tags == oldSelf.tags", "message": "immutable"}])
    assert errors(schema, {"spec": {"tags": ["a", "b"]}}, {"spec": {"tags": ["b", "a"]}}) == []
    assert errors(schema, {"spec": {"tags": ["a", "c"]}}, {"spec": {"tags": ["b", "a"]}}) == [
        'spec: Invalid value: "object": immutable'
    ]


def test_optional_old_self_runs_on_create_too():
    rules = [{"rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas", "optionalOldSelf": True,
              "message": "no scale down"},
             {"rule": "oldSelf.?replicas.orValue(0) <= self.replicas", "optionalOldSelf": True}]  # fmt: skip
    schema = spec_schema(REPLICAS, rules)
    assert errors(schema, {"spec": {"replicas": 1}}) == []
    assert errors(schema, {"spec": {"replicas": 1}}, {"spec": {"replicas": 2}}) == [
        'spec: Invalid value: "object": no scale down',
        'spec: Invalid value: "object": failed rule: oldSelf.?replicas.orValue(0) <= self.replicas',
    ]


# -- ratcheting ---------------------------------------------------------------------------------------------------


def test_ratcheting_drops_errors_of_unchanged_values():
    inner = {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.x > 5"}],
    }
    schema = spec_schema({"a": {"type": "integer"}, "b": inner}, [{"rule": "self.a > 5"}])
    old = {"spec": {"a": 1, "b": {"x": 1}}}
    assert errors(schema, {"spec": {"a": 1, "b": {"x": 1}}}, old) == []
    # b changed: its own rule reports, and so does spec's (spec changed with it)
    assert errors(schema, {"spec": {"a": 1, "b": {"x": 2}}}, old) == [
        'spec: Invalid value: "object": failed rule: self.a > 5',
        'spec.b: Invalid value: "object": failed rule: self.x > 5',
    ]
    # a create is always validated in full
    assert len(errors(schema, {"spec": {"a": 1, "b": {"x": 1}}})) == 2


def test_transition_rules_are_not_ratcheted():
    schema = spec_schema(REPLICAS, [{"rule": "self.replicas == oldSelf.replicas + 1", "message": "must grow"}])
    assert errors(schema, {"spec": {"replicas": 1}}, {"spec": {"replicas": 1}}) == [
        'spec: Invalid value: "object": must grow'
    ]


# -- compile errors -----------------------------------------------------------------------------------------------


def _rule_value(rule: str, **fields: str) -> str:
    message = fields.get("message", "")
    expression = fields.get("messageExpression", "")
    return (
        f'apiextensions.ValidationRule{{Rule:"{rule}", Message:"{message}", MessageExpression:"{expression}", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}'
    )


RULES_PATH = f"{SCHEMA_PATH}.properties[spec].x-kubernetes-validations[0]"


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"rule": "foo == 1"},
         f"{RULES_PATH}.rule: Invalid value: {_rule_value('foo == 1')}: compilation failed: ERROR: <input>:1:1: "
         "undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"),
        ({"rule": "self.replica > 1"},
         f"{RULES_PATH}.rule: Invalid value: {_rule_value('self.replica > 1')}: compilation failed: ERROR: "
         "<input>:1:5: undefined field 'replica'\n | self.replica > 1\n | ....^"),
        ({"rule": "self.replicas"},
         f"{RULES_PATH}.rule: Invalid value: {_rule_value('self.replicas')}: cel expression must evaluate to a bool"),
        ({"rule": "self.replicas > 1", "messageExpression": "self.replicas"},
         f"{RULES_PATH}.messageExpression: Invalid value: "
         f"{_rule_value('self.replicas > 1', messageExpression='self.replicas')}: "
         "messageExpression must evaluate to a string"),
        ({"rule": "self.replicas > 1", "messageExpression": "nope"},
         f"{RULES_PATH}.messageExpression: Invalid value: {_rule_value('self.replicas > 1', messageExpression='nope')}"
         ": messageExpression compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')"
         "\n | nope\n | ^"),
        ({"rule": "self.replicas > 1", "optionalOldSelf": True},
         f"{RULES_PATH}.optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"),
    ],
)  # fmt: skip
def test_compile_errors(rule, expected):
    assert compile_errors(spec_schema(REPLICAS, [rule])) == [expected]


def test_valid_rules_compile_cleanly():
    rules = [{"rule": RANGE_RULE}, NO_SCALE_DOWN, {"rule": "self.replicas < 2.5"}]
    assert compile_errors(spec_schema(REPLICAS, rules)) == []


def test_old_self_under_a_list_that_does_not_correlate():
    item = {"type": "string", "maxLength": 5, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    schema = spec_schema({"names": {"type": "array", "maxItems": 5, "items": item}}, [])
    assert compile_errors(schema) == [
        f"{SCHEMA_PATH}.properties[spec].properties[names].items.x-kubernetes-validations[0].rule: Invalid value: "
        f'"self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within '
        f"{SCHEMA_PATH}.properties[spec].properties[names]"
    ]


def test_estimated_cost_over_budget():
    items = {"type": "array", "items": {"type": "string"}}  # no maxItems, no maxLength
    schema = spec_schema({"items": items}, [{"rule": "self.items.all(x, self.items.all(y, x.startsWith(y)))"}])
    errs = compile_errors(schema)
    assert errs[0] == (
        f"{RULES_PATH}.rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try "
        "simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are "
        "declared)"
    )
    assert errs[-1].startswith(
        f"{SCHEMA_PATH}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
    )
    bounded = {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}
    assert (
        compile_errors(spec_schema({"items": bounded}, schema["properties"]["spec"]["x-kubernetes-validations"])) == []
    )


def test_compile_error_is_reported_on_objects_too():
    schema = spec_schema(REPLICAS, [{"rule": "foo == 1"}])
    assert errors(schema, {"spec": {"replicas": 1}}) == [
        'spec: Invalid value: "object": rule compile error: compilation failed: ERROR: <input>:1:1: undeclared '
        "reference to 'foo' (in container '')\n | foo == 1\n | ^"
    ]


def test_rules_checker_reports_one_node():
    node = {"type": "object", "properties": REPLICAS, "x-kubernetes-validations": [{"rule": "self.nope > 1"}]}
    errs = [str(e) for e in rules_checker(node, "spec.versions[0].schema.openAPIV3Schema.properties[spec]", None)]
    assert len(errs) == 1 and "undefined field 'nope'" in errs[0]


def test_runtime_budget_stops_validation():
    """Each item's rule costs about 30k (90 x 90 iterations): the 10M budget runs out after a few hundred items."""
    xs = {"type": "array", "maxItems": 100, "items": {"type": "integer"}}
    item = {"type": "object", "properties": {"xs": xs},
            "x-kubernetes-validations": [{"rule": "self.xs.all(x, self.xs.all(y, x + y >= 0))"}]}  # fmt: skip
    schema = spec_schema({"items": {"type": "array", "maxItems": 1000, "items": item}}, [])
    assert errors(schema, {"spec": {"items": [{"xs": list(range(90))} for _ in range(100)]}}) == []
    errs = errors(schema, {"spec": {"items": [{"xs": list(range(90))} for _ in range(1000)]}})
    assert len(errs) == 1
    assert errs[0].endswith(
        'Invalid value: "object": validation failed due to running out of cost budget, no further validation rules '
        "will be run"
    )


def test_per_call_limit():
    xs = {"type": "array", "maxItems": 2000, "items": {"type": "integer"}}
    rule = "self.xs.all(x, self.xs.all(y, x + y >= 0))"
    schema = spec_schema({"xs": xs}, [{"rule": rule}])
    assert errors(schema, {"spec": {"xs": list(range(1000))}}) == [
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation "
        f"rules will be run due to call cost exceeds limit for rule: {rule}"
    ]
