"""Patches: JSON patch, merge patch, strategic merge patch with directives, and the strategic diff."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.patch import PatchError, json_patch, merge_patch, strategic_merge
from pyk8s.api.schema import kind_node
from pyk8s.client.three_way_patch import two_way_strategic_patch

POD = kind_node("", "v1", "Pod")
DEPLOYMENT = kind_node("apps", "v1", "Deployment")


def test_merge_patch_rfc7386():
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == {
        "a": 1, "b": {"d": 3, "e": 4}, "f": [1]}  # fmt: skip
    assert merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}


def test_json_patch_operations():
    doc = {"spec": {"containers": [{"name": "a"}], "x": 1}}
    out = json_patch(doc, [
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "b"}},
        {"op": "replace", "path": "/spec/x", "value": 2},
        {"op": "copy", "from": "/spec/x", "path": "/spec/y"},
        {"op": "move", "from": "/spec/y", "path": "/spec/z"},
        {"op": "remove", "path": "/spec/containers/0"},
        {"op": "test", "path": "/spec/z", "value": 2},
        {"op": "add", "path": "/metadata~1x", "value": "slash"},
    ])  # fmt: skip
    assert out == {"spec": {"containers": [{"name": "b"}], "x": 2, "z": 2}, "metadata/x": "slash"}
    assert doc == {"spec": {"containers": [{"name": "a"}], "x": 1}}  # the original is untouched


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/a/b", "value": 1}],
        [{"op": "test", "path": "/a", "value": 2}],
        [{"op": "add", "path": "/list/5", "value": 1}],
        [{"op": "bogus", "path": "/a"}],
        [{"path": "/a"}],
        {"op": "add"},
    ],
)
def test_json_patch_errors(ops):
    with pytest.raises(PatchError):
        json_patch({"a": 1, "list": []}, ops)


def test_strategic_merge_merges_containers_by_name():
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    patch = {"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]}}
    out = strategic_merge(pod, patch, POD)
    assert out["spec"]["containers"] == [
        {"name": "a", "image": "x"}, {"name": "b", "image": "z"}, {"name": "c", "image": "w"}]  # fmt: skip
    # A list without a merge strategy is replaced.
    out = strategic_merge({"spec": {"containers": [{"name": "a", "args": ["1", "2"]}]}},
                          {"spec": {"containers": [{"name": "a", "args": ["3"]}]}}, POD)  # fmt: skip
    assert out["spec"]["containers"][0]["args"] == ["3"]


def test_strategic_merge_directives():
    pod = {"metadata": {"finalizers": ["a", "b"]},
           "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}  # fmt: skip
    out = strategic_merge(pod, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b"]
    out = strategic_merge(pod, {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]
    out = strategic_merge(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]}}, POD)
    assert out["metadata"]["finalizers"] == ["b", "c"]
    out = strategic_merge(pod, {"spec": {"$patch": "replace", "containers": [{"name": "z"}]}}, POD)
    assert out["spec"] == {"containers": [{"name": "z"}]}
    out = strategic_merge(pod, {"spec": {"containers": [{"$patch": "replace"}, {"name": "q"}]}}, POD)
    assert out["spec"]["containers"] == [{"name": "q"}]
    dep = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = strategic_merge(dep, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, DEPLOYMENT)
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    with pytest.raises(PatchError):
        strategic_merge(pod, {"spec": {"containers": [{"image": "no-name"}]}}, POD)


names = st.sampled_from(["a", "b", "c", "d"])
container = st.fixed_dictionaries(
    {"name": names},
    optional={
        "image": st.sampled_from(["nginx", "redis", "busybox"]),
        "args": st.lists(st.sampled_from(["-v", "-x", "run"]), max_size=3),
        "env": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"]), "value": st.sampled_from(["1", "2"])}),
            max_size=3, unique_by=lambda e: e["name"],
        ),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.sampled_from([80, 443, 8080]), "name": st.sampled_from(["p", "q"])}
            ),
            max_size=2, unique_by=lambda p: p["containerPort"],
        ),
    },
)  # fmt: skip
pod_strategy = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": st.just("p")},
            optional={
                "labels": st.dictionaries(st.sampled_from(["app", "tier", "env"]), st.sampled_from(["x", "y"])),
                "finalizers": st.lists(st.sampled_from(["f1", "f2", "f3"]), unique=True, max_size=3),
            },
        ),
        "spec": st.fixed_dictionaries(
            {"containers": st.lists(container, min_size=1, max_size=4, unique_by=lambda c: c["name"])},
            optional={"nodeName": st.sampled_from(["n1", "n2"]), "hostname": st.just("h")},
        ),
    }
)


@settings(max_examples=300, deadline=None)
@given(a=pod_strategy, b=pod_strategy)
def test_strategic_patch_of_diff_is_the_target(a, b):
    # The client computes the patch as kubectl does; the server's merge must land exactly on the target.
    patch = two_way_strategic_patch(a, b, POD)
    assert strategic_merge(a, patch, POD) == b
    assert two_way_strategic_patch(a, a, POD) == {}


def merge_diff(a, b):
    """The RFC 7386 patch from a to b (null for removed keys, recursion into objects)."""
    out = {k: None for k in a if k not in b}
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            sub = merge_diff(a[k], v)
            if sub:
                out[k] = sub
        elif a.get(k) != v or k not in a:
            out[k] = v
    return out


@settings(max_examples=200, deadline=None)
@given(a=pod_strategy, b=pod_strategy)
def test_merge_patch_of_a_merge_diff_is_the_target(a, b):
    assert merge_patch(a, merge_diff(a, b)) == b


@settings(max_examples=200, deadline=None)
@given(a=pod_strategy, b=pod_strategy)
def test_merge_patch_in_place_gives_the_same_object_and_shares_nothing_with_the_patch(a, b):
    """The API server merges a patch into its own copy of the stored object: the result is what a copying merge
    gives, the input is left alone without `in_place`, and changing the result never reaches the patch (which a
    retried update applies again)."""
    patch = merge_diff(a, b)
    before = orjson.loads(orjson.dumps(a))
    assert merge_patch(a, patch) == b and a == before
    mine = orjson.loads(orjson.dumps(a))
    merged = merge_patch(mine, patch, in_place=True)
    assert merged is mine and merged == b
    patch_before = orjson.loads(orjson.dumps(patch))
    _scribble(merged)
    assert patch == patch_before


def _scribble(value):
    """Change every map and list inside `value`."""
    if isinstance(value, dict):
        for v in value.values():
            _scribble(v)
        value["scribbled"] = True
    elif isinstance(value, list):
        for v in value:
            _scribble(v)
        value.append("scribbled")
