"""The rule shortcut (pyk8s.cel.fastpath) against the CEL runtime: wherever it answers "true", the runtime's
answer is true, over random expressions of its subset and random values (ints at and beyond int64, NaN, -0.0,
non-ASCII strings, nulls, lists and maps in place of scalars); and the rules it is for do take it."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pyk8s.cel.environment import OBJECT, CompileError, EvalError, compile_expression

_FIELDS = ("a", "b", "c")
_scalars = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([(1 << 63) - 1, -(1 << 63), 1 << 63, 1 << 64]),
    st.sampled_from(["", "x", "y", "é", "z\U0001f600", "xx"]),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), float("inf")]),
    st.none(),
)
_values = st.one_of(
    _scalars, st.lists(_scalars, max_size=2), st.dictionaries(st.sampled_from(_FIELDS), _scalars, max_size=2)
)
_objects = st.dictionaries(st.sampled_from(_FIELDS), _values, max_size=3)

_operands = st.one_of(
    st.sampled_from([f"self.{f}" for f in _FIELDS]),
    st.sampled_from([f"size(self.{f})" for f in _FIELDS] + [f"self.{f}.size()" for f in _FIELDS]),
    st.sampled_from(["self.a.b", "0", "1", "3", "-1", "'x'", "'é'", "''", "true", "false", "1u", "1.0", "null"]),
)
_comparisons = st.builds(
    lambda a, op, b: f"{a} {op} {b}", _operands, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), _operands
)
_atoms = st.one_of(
    _comparisons,
    st.sampled_from([f"has(self.{f})" for f in _FIELDS] + ["has(self.a.b)", "self.a", "true", "false"]),
)
_rules = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) && ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) || ({b})", inner, inner),
        st.builds(lambda a: f"!({a})", inner),
    ),
    max_leaves=4,
)


def _runtime(program, value):
    try:
        return program.evaluate(program.activation(value))
    except EvalError as err:
        return err


@settings(max_examples=600, deadline=None)
@given(rule=_rules, values=st.lists(_objects, min_size=1, max_size=6))
def test_the_shortcut_only_says_true_where_the_runtime_does(rule: str, values: list) -> None:
    try:
        program = compile_expression(rule, OBJECT)
    except CompileError:
        assume(False)
        return
    if program.shortcut is None:
        return
    for value in values:
        if program.shortcut(value):
            assert _runtime(program, value) is True, (rule, value)


@pytest.mark.parametrize(
    ("rule", "value"),
    [
        ("self.minReplicas <= self.replicas", {"minReplicas": 1, "replicas": 3}),
        ("has(self.a) || has(self.b)", {"b": "x"}),
        ("self.mode == 'Fast' && size(self.name) < 10", {"mode": "Fast", "name": "é"}),
        ("!(self.x > 5)", {"x": 5}),
        ("self.a.size() >= 1", {"a": [1]}),
        ("self.a || true", {"a": None}),  # true whatever the other side is (an error too)
    ],
)
def test_simple_rules_take_the_shortcut(rule: str, value: dict) -> None:
    program = compile_expression(rule, OBJECT)
    assert program.shortcut is not None and program.shortcut(value)
    assert _runtime(program, value) is True


@pytest.mark.parametrize(
    ("rule", "value"),
    [
        ("self.minReplicas <= self.replicas", {"minReplicas": 4, "replicas": 3}),  # false: the runtime says so
        ("self.minReplicas <= self.replicas", {"replicas": 3}),  # no such key: the runtime words it
        ("self.a < self.b", {"a": 1, "b": 1.5}),  # int against double: left to the runtime
        ("self.a == self.b", {"a": 1 << 63, "b": 1 << 63}),  # beyond int64
        ("self.a != self.b", {"a": float("nan"), "b": float("nan")}),
        ("has(self.a)", {"a": 1, "b": [1 << 64]}),  # the runtime cannot hold the value: an error
    ],
)
def test_the_rest_is_left_to_the_runtime(rule: str, value: dict) -> None:
    program = compile_expression(rule, OBJECT)
    assert program.shortcut is not None and not program.shortcut(value)


@pytest.mark.parametrize(
    "rule",
    ["self.a.startsWith('x')", "self.all(k, k != 'x')", "self.a + 1 > 2", "self == oldSelf", "self.?a.orValue(1) > 0",
     "self.a in [1, 2]", "1u < 2u", "self.a[0] == 1"],
)  # fmt: skip
def test_outside_the_subset_there_is_no_shortcut(rule: str) -> None:
    try:
        program = compile_expression(rule, OBJECT)
    except CompileError:
        pytest.skip("does not compile here")
    assert program.shortcut is None
