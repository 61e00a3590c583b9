"""Label and field selectors: upstream's grammar, matching, and errors."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.api.selectors import (
    SelectorError,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "frontend", "env": "prod", "replicas": "3", "example.com/team": "a"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app = web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db, cache)", True),
        ("missing notin (x)", True),
        ("missing in (x)", False),
        ("app=web,tier=frontend", True),
        ("app=web,tier=backend", False),
        ("replicas>2", True),
        ("replicas<2", False),
        ("missing>1", False),
        ("example.com/team=a", True),
        ("env in (in, notin, prod)", True),
        ("app=", False),
        ("nolabel=", False),
        ("x in ()", False),
    ],
)
def test_label_selector_matching(selector, matches):
    assert parse_label_selector(selector).matches(LABELS) is matches


@pytest.mark.parametrize(
    "bad",
    [
        "app=web=x",
        "app web",
        "app in web",
        "app in (a",
        "=web",
        "a,",
        ",a",
        "app=we b",
        "app=" + "x" * 64,
        "x" * 64,
        "app@x=1",
        "a>b",
        "!a=b",
        "a=(b)",
    ],
)
def test_malformed_label_selectors_are_errors(bad):
    with pytest.raises(SelectorError):
        parse_label_selector(bad)


def test_label_selector_object_forms():
    sel = label_selector_from_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}],
        }
    )
    assert sel.matches(LABELS) and not sel.matches({"app": "web"})
    assert label_selector_from_object({}).matches({})  # empty: everything
    assert not label_selector_from_object(None).matches(LABELS)  # missing: nothing
    with pytest.raises(SelectorError):
        label_selector_from_object({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    with pytest.raises(SelectorError):
        label_selector_from_object({"matchExpressions": [{"key": "a", "operator": "Near"}]})


BAD_VALUE_DETAIL = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start"
    " and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for"
    " validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
BAD_KEY_DETAIL = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is"
    " '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        # Upstream's metav1.LabelSelectorAsSelector: labels.NewRequirement's field errors, aggregated.
        (
            {"matchExpressions": [{"key": "security", "operator": "In", "values": ["{{.bad-value.}}"]}]},
            f'values[0][security]: Invalid value: "{{{{.bad-value.}}}}": {BAD_VALUE_DETAIL}',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["ok", "b@d"]}]},
            f'values[1][k]: Invalid value: "b@d": {BAD_VALUE_DETAIL}',
        ),
        ({"matchLabels": {"app": "b@d"}}, f'values[0][app]: Invalid value: "b@d": {BAD_VALUE_DETAIL}'),
        ({"matchLabels": {"b@d": "x"}}, f'key: Invalid value: "b@d": {BAD_KEY_DETAIL}'),
        (
            {"matchLabels": {"b@d": "b@d"}},
            f'[key: Invalid value: "b@d": {BAD_KEY_DETAIL}, values[0][b@d]: Invalid value: "b@d": {BAD_VALUE_DETAIL}]',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn"}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]},
            'values: Invalid value: []string{"x", "y"}: values set must be empty for exists and does not exist',
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Near"}]}, '"Near" is not a valid label selector operator'),
        # The first failing requirement decides: match labels before expressions.
        (
            {"matchLabels": {"a": "b@d"}, "matchExpressions": [{"key": "a", "operator": "Near"}]},
            f'values[0][a]: Invalid value: "b@d": {BAD_VALUE_DETAIL}',
        ),
    ],
)
def test_label_selector_object_errors_read_as_upstream(selector, message):
    with pytest.raises(SelectorError) as err:
        label_selector_from_object(selector)
    assert str(err.value) == message


label_keys = st.sampled_from(["a", "b", "c"])
label_values = st.sampled_from(["x", "y", "z", ""])


@given(
    labels=st.dictionaries(label_keys, label_values),
    key=label_keys,
    values=st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3),
)
def test_in_and_notin_are_complements(labels, key, values):
    in_sel = parse_label_selector(f"{key} in ({','.join(values)})")
    notin_sel = parse_label_selector(f"{key} notin ({','.join(values)})")
    assert in_sel.matches(labels) != notin_sel.matches(labels)
    assert in_sel.matches(labels) == (labels.get(key) in values)


@given(labels=st.dictionaries(label_keys, label_values), key=label_keys, value=st.sampled_from(["x", "y"]))
def test_equality_and_inequality_are_complements(labels, key, value):
    assert parse_label_selector(f"{key}={value}").matches(labels) != parse_label_selector(f"{key}!={value}").matches(
        labels
    )


@given(
    labels=st.dictionaries(label_keys, label_values),
    reqs=st.lists(st.tuples(label_keys, st.sampled_from(["=", "!="]), st.sampled_from(["x", "y"])), max_size=4),
)
def test_a_selector_is_the_conjunction_of_its_requirements(labels, reqs):
    parts = [f"{k}{op}{v}" for k, op, v in reqs]
    whole = parse_label_selector(",".join(parts)).matches(labels)
    assert whole == all(parse_label_selector(p).matches(labels) for p in parts)
    # Equality-only selectors match a dict by one subset test; any other mapping goes requirement by requirement.
    assert parse_label_selector(",".join(parts)).matches(MappingProxyType(labels)) == whole
    # The printed form parses back to the same selector.
    sel = parse_label_selector(",".join(parts))
    assert parse_label_selector(str(sel)) == sel


def test_equal_keys_with_different_values_match_nothing():
    sel = parse_label_selector("app=web,app=db")
    assert not sel.matches({"app": "web"}) and not sel.matches({"app": "db"})
    assert parse_label_selector("app=web,app in (web)").matches({"app": "web"})


def test_field_selectors():
    fields = {"metadata.name": "web-1", "spec.nodeName": "", "status.phase": "Running"}
    assert parse_field_selector("metadata.name=web-1").matches(fields)
    assert parse_field_selector("metadata.name==web-1,status.phase!=Pending").matches(fields)
    assert parse_field_selector("spec.nodeName=").matches(fields)
    assert not parse_field_selector("spec.nodeName!=").matches(fields)
    assert parse_field_selector(r"metadata.name=a\,b").requirements[0].value == "a,b"
    assert parse_field_selector("metadata.name=x").exact("metadata.name") == "x"
    for bad in ["metadata.name", "a=b=c", r"a=b\q"]:
        with pytest.raises(SelectorError):
            parse_field_selector(bad)
