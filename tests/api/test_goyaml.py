"""YAML as go-yaml v2 and sigs.k8s.io/yaml read it (api/goyaml.py): what kubectl and kube-apiserver make of
a manifest before anything else looks at it, and the bounds on what a small document may expand into."""

from __future__ import annotations

import pytest

from pyk8s.api import goyaml


@pytest.mark.parametrize(
    "text, value",
    [
        ("a: y", {"a": True}),
        ("a: N", {"a": False}),
        ("a: off", {"a": False}),
        ("a: 2024-01-01", {"a": "2024-01-01"}),  # timestamps stay the strings they are
        ("a: !!timestamp 2024-01-01T00:00:00Z", {"a": "2024-01-01T00:00:00Z"}),
        ("a: 0x1f", {"a": 31}),
        ("a: 017", {"a": 15}),
        ("a: 1_000", {"a": 1000}),
        ("a: 1.0", {"a": 1}),  # Go writes this float64 as 1, read back as an integer
        ("a: 1.5", {"a": 1.5}),
        ("a: 1:30", {"a": "1:30"}),  # no sexagesimal numbers
        ("a: " + "9" * 400, {"a": "9" * 400}),  # too large for int64 and float64: go-yaml keeps the string
        ("a: !!binary aGVsbG8=", {"a": "hello"}),
        ("a: !!binary /w==", {"a": "\ufffd"}),  # invalid UTF-8 bytes as json.Marshal writes them
        (
            "{1: a, true: b, 1.5: d, 1e6: e, 0.1: f, .inf: g}",
            {"1": "a", "true": "b", "1.5": "d", "1e+06": "e", "0.1": "f", ".inf": "g"},
        ),  # keys as sigs.k8s.io/yaml writes them
        ("a: &x {b: 1}\nc: *x", {"a": {"b": 1}, "c": {"b": 1}}),
    ],
)
def test_scalars_and_keys_resolve_as_go_yaml_does(text: str, value: object) -> None:
    assert goyaml.load(text) == value


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: .inf", "json: unsupported value: +Inf"),
        ("{null: a}", "unsupported map key of type: <nil>"),
        ("a: &a [*a]", "yaml: anchor value contains itself"),
        ("a: [" * 300 + "]" * 300, "exceeded max depth"),
        ("a: b: c", "yaml: line 1: mapping values are not allowed"),
    ],
)
def test_what_json_cannot_carry_is_an_error(text: str, message: str) -> None:
    with pytest.raises(goyaml.YAMLDecodeError) as err:
        goyaml.load(text)
    assert message in str(err.value)


def test_alias_expansion_is_bounded_as_go_yaml_bounds_it() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 10)}]")
    with pytest.raises(goyaml.YAMLDecodeError) as err:
        goyaml.load("\n".join(lines))  # 10^9 values from 400 bytes
    assert str(err.value) == "yaml: document contains excessive aliasing"
    # Aliases are fine in moderation: a few hundred reuses of a small anchor expand.
    small = "base: &b {k: v}\nitems: [" + ",".join(["*b"] * 300) + "]"
    assert len(goyaml.load(small)["items"]) == 300
