"""Server-side apply's rules (api/field_manager, api/structured_merge) on objects as dicts: what an apply
merges, owns, removes and conflicts on, and upstream's messages; hypothesis properties for idempotence,
managers not losing each other's fields, and when a conflict is reported."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api import errors
from pyk8s.api.field_manager import LAST_APPLIED, FieldManager
from pyk8s.api.schema import kind_node
from pyk8s.api.structured_merge.fieldpath import from_fields_v1, render, to_fields_v1
from pyk8s.api.structured_merge.typed import merge
from pyk8s.api.types.codec import codec_for

DEP = kind_node("apps", "v1", "Deployment")


def fm(subresource: str = "") -> FieldManager:
    reset = (("f:status",),) if not subresource else (("f:spec",), ("f:metadata", "f:labels"))
    return FieldManager(
        DEP, "apps/v1", "Deployment", subresource, codec_for("apps", "v1", "Deployment").decoder.zero(), reset
    )


def config(replicas: int | None = None, image: str | None = None, labels: dict | None = None, **spec) -> dict:
    out: dict = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": dict(spec)}
    if labels is not None:
        out["metadata"]["labels"] = labels
    if replicas is not None:
        out["spec"]["replicas"] = replicas
    if image is not None:
        out["spec"]["template"] = {"spec": {"containers": [{"name": "c", "image": image}]}}
    return out


def copy(x):
    return orjson.loads(orjson.dumps(x))


def owners(obj: dict) -> dict:
    return {e["manager"]: from_fields_v1(e["fieldsV1"]) for e in obj["metadata"].get("managedFields") or []}


def apply(live, cfg, manager, force=False, subresource=""):
    out = fm(subresource).apply(copy(live) if live is not None else None, copy(cfg), manager, force)
    out.setdefault("metadata", {}).setdefault("uid", "u")  # stored: an object that exists has a uid
    return out


def test_an_apply_that_creates_owns_exactly_what_it_applied():
    obj = apply(None, config(replicas=2, image="nginx", labels={"app": "web"}), "mgr")
    [entry] = obj["metadata"]["managedFields"]
    assert entry["operation"] == "Apply" and entry["manager"] == "mgr" and "time" in entry
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
            'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}}}},
    }  # fmt: skip
    assert obj["spec"]["replicas"] == 2 and obj["metadata"]["labels"] == {"app": "web"}


def test_applying_less_removes_what_only_the_applier_owned():
    obj = apply(None, config(replicas=2, image="nginx", labels={"app": "web", "tier": "front"}), "mgr")
    obj = apply(obj, config(image="nginx", labels={"app": "web"}), "mgr")
    assert "replicas" not in obj["spec"] and obj["metadata"]["labels"] == {"app": "web"}
    # ... unless another manager owns it too.
    obj = apply(obj, config(replicas=3, image="nginx"), "mgr")
    obj = apply(obj, config(replicas=3), "other")
    obj = apply(obj, config(image="nginx"), "mgr")
    assert obj["spec"]["replicas"] == 3
    assert owners(obj)["other"] == {("f:spec", "f:replicas")}


def test_a_conflict_names_the_manager_and_the_field_and_force_takes_it_over():
    obj = apply(None, config(replicas=2, image="nginx"), "mgr")
    with pytest.raises(errors.StatusError) as e:
        apply(obj, config(replicas=5, image="redis"), "other")
    err = e.value
    assert err.code == 409 and err.reason == "Conflict"
    assert err.message == (
        'Apply failed with 2 conflicts: conflicts with "mgr":\n- .spec.replicas\n'
        '- .spec.template.spec.containers[name="c"].image'
    )
    assert err.details == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr"', "field": ".spec.replicas"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr"',
         "field": '.spec.template.spec.containers[name="c"].image'},
    ]}  # fmt: skip
    forced = apply(obj, config(replicas=5), "other", force=True)
    assert forced["spec"]["replicas"] == 5
    assert ("f:spec", "f:replicas") not in owners(forced)["mgr"]
    assert owners(forced)["other"] == {("f:spec", "f:replicas")}


def test_a_conflict_with_an_update_manager_names_its_api_version():
    obj = apply(None, config(replicas=2), "mgr")
    scaled = copy(obj)
    scaled["spec"]["replicas"] = 4
    fm().update(obj, scaled, "kubectl-scale")
    with pytest.raises(errors.StatusError) as e:
        apply(scaled, config(replicas=2), "mgr")
    assert (
        e.value.message == 'Apply failed with 1 conflict: conflict with "kubectl-scale" using apps/v1: .spec.replicas'
    )


def test_the_same_value_is_shared_not_a_conflict():
    obj = apply(None, config(replicas=2), "a")
    obj = apply(obj, config(replicas=2), "b")
    assert owners(obj) == {"a": {("f:spec", "f:replicas")}, "b": {("f:spec", "f:replicas")}}
    obj = apply(obj, config(), "a")  # a lets go; b still holds it
    assert obj["spec"]["replicas"] == 2


def test_an_untracked_object_is_owned_by_before_first_apply():
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "uid": "u"},
            "spec": {"replicas": 1, "paused": True}}  # fmt: skip
    obj = apply(live, config(replicas=1), "mgr")
    assert obj["spec"]["paused"] is True
    assert ("f:spec", "f:paused") in owners(obj)["before-first-apply"]
    with pytest.raises(errors.StatusError) as e:
        apply(live, config(replicas=3), "mgr")
    assert '"before-first-apply" using apps/v1: .spec.replicas' in e.value.message


def test_kubectl_takes_over_what_its_last_applied_annotation_holds():
    last = config(replicas=2)
    live = {**config(replicas=2), "metadata": {"name": "d", "uid": "u", "annotations": {
        LAST_APPLIED: orjson.dumps(last).decode()}}}  # fmt: skip
    fm().update(None, live, "kubectl-client-side-apply")
    obj = apply(live, config(replicas=3, labels={"a": "b"}), "kubectl")
    assert obj["spec"]["replicas"] == 3
    assert orjson.loads(obj["metadata"]["annotations"][LAST_APPLIED])["spec"] == {"replicas": 3}
    # Another manager gets the conflict.
    live2 = copy(live)
    with pytest.raises(errors.StatusError):
        apply(live2, config(replicas=3), "someone-else")


def test_apply_refuses_what_upstream_refuses():
    with pytest.raises(errors.StatusError) as e:
        apply(None, {**config(), "kind": "StatefulSet"}, "m")
    assert e.value.code == 400 and e.value.message == "invalid object type: apps/v1, Kind=StatefulSet"
    with pytest.raises(errors.StatusError) as e:
        apply(None, {**config(), "metadata": {"name": "d", "managedFields": []}}, "m")
    assert e.value.message == "metadata.managedFields must be nil"
    with pytest.raises(errors.StatusError) as e:
        apply(None, config(foo=1), "m")
    assert e.value.code == 400
    assert (
        e.value.message
        == "failed to create typed patch object (/d; apps/v1, Kind=Deployment): .spec.foo: field not declared in schema"
    )
    dup = config()
    dup["spec"]["template"] = {"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}
    with pytest.raises(errors.StatusError) as e:
        apply(None, dup, "m")
    assert e.value.message.endswith('.spec.template.spec.containers: duplicate entries for key [name="c"]')


def test_an_apply_to_status_owns_status_only():
    obj = apply(None, config(replicas=1), "mgr")
    status_cfg = {
        **config(replicas=9),
        "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]},
    }
    out = apply(obj, status_cfg, "ctl", subresource="status")
    entry = next(e for e in out["metadata"]["managedFields"] if e["manager"] == "ctl")
    assert entry["subresource"] == "status"
    assert set(entry["fieldsV1"]) == {"f:status"}


def test_list_order_follows_the_config_and_keeps_live_items_in_place():
    node = DEP.child("spec").child("template").child("spec").child("containers")
    live = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    assert [x["name"] for x in merge(live, [{"name": "c"}, {"name": "a"}], node)] == ["b", "c", "a"]
    assert [x["name"] for x in merge(live, [{"name": "d"}], node)] == ["a", "b", "c", "d"]


def test_paths_render_as_upstream_prints_them():
    assert render(("f:spec", "f:containers", 'k:{"name":"x"}', "f:image")) == '.spec.containers[name="x"].image'
    assert render(("f:metadata", "f:finalizers", 'v:"a/b"')) == '.metadata.finalizers[="a/b"]'
    ports = ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}')
    assert render(ports) == '.spec.ports[port=80,protocol="TCP"]'
    assert to_fields_v1({("f:b",), ("f:a", "f:x"), ("f:a",)}) == {"f:a": {".": {}, "f:x": {}}, "f:b": {}}


# -- properties ------------------------------------------------------------------------------------------

_labels = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]), max_size=3)
_containers = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["x", "y", "z"])}, optional={
        "image": st.sampled_from(["i1", "i2"]), "args": st.lists(st.sampled_from(["1", "2"]), max_size=2),
        "workingDir": st.sampled_from(["/a", "/b"])}),
    max_size=3, unique_by=lambda c: c["name"],
)  # fmt: skip
_configs = st.builds(
    lambda labels, replicas, containers, paused: _cfg(labels, replicas, containers, paused),
    st.none() | _labels,
    st.none() | st.integers(0, 3),
    st.none() | _containers,
    st.none() | st.booleans(),
)


def _cfg(labels, replicas, containers, paused) -> dict:
    out: dict = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    if labels is not None:
        out["metadata"]["labels"] = labels
    spec: dict = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if paused is not None:
        spec["paused"] = paused
    if containers is not None:
        spec["template"] = {"spec": {"containers": containers}}
    if spec:
        out["spec"] = spec
    return out


def _leaves(cfg: dict) -> dict:
    """Every leaf a configuration sets, by path, with its value (the oracle's own walk)."""
    out = {}
    for k, v in (cfg["metadata"].get("labels") or {}).items():
        out[("labels", k)] = v
    spec = cfg.get("spec") or {}
    for k in ("replicas", "paused"):
        if k in spec:
            out[(k,)] = spec[k]
    for c in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []:
        for k, v in c.items():
            out[("containers", c["name"], k)] = v
    return out


def _value(obj: dict, path: tuple):
    if path[0] == "labels":
        return (obj["metadata"].get("labels") or {}).get(path[1])
    if len(path) == 1:
        return (obj.get("spec") or {}).get(path[0])
    for c in obj["spec"]["template"]["spec"]["containers"]:
        if c["name"] == path[1]:
            return c.get(path[2])
    return None


@settings(max_examples=300, deadline=None)
@given(cfg=_configs, other=_configs)
def test_apply_is_idempotent(cfg, other):
    obj = apply(None, other, "someone")
    once = apply(obj, cfg, "mgr", force=True)
    twice = apply(once, cfg, "mgr")
    # The object, and what the applier owns, do not move. (An apply to an object nobody tracks — this one,
    # when neither configuration set a field — first gives its fields to before-first-apply, as upstream.)
    assert {**twice, "metadata": _meta(twice)} == {**once, "metadata": _meta(once)}
    assert owners(twice).get("mgr") == owners(once).get("mgr")
    if once["metadata"].get("managedFields"):
        assert twice == once


def _meta(obj: dict) -> dict:
    return {k: v for k, v in obj["metadata"].items() if k != "managedFields"}


@settings(max_examples=300, deadline=None)
@given(a=_configs, b=_configs)
def test_a_conflict_is_reported_iff_another_manager_set_a_field_to_another_value(a, b):
    """Upstream's rule, as seen from the configurations alone: B's apply conflicts exactly when B sets a leaf
    A set, to a different value; when it does not, every field A applied keeps A's value and owner."""
    obj = apply(None, a, "A")
    la, lb = _leaves(a), _leaves(b)
    clash = {p for p in la.keys() & lb.keys() if la[p] != lb[p]}
    try:
        after = apply(obj, b, "B")
    except errors.StatusError as e:
        assert e.code == 409
        assert clash, e.message
        assert len(e.details["causes"]) == len(clash)
        return
    assert not clash
    for p, v in la.items():
        assert _value(after, p) == v
    assert owners(after).get("A", set()) == owners(obj).get("A", set())


@settings(max_examples=300, deadline=None)
@given(a=_configs, b=_configs, a2=_configs)
def test_an_applier_only_removes_what_nobody_else_owns(a, b, a2):
    obj = apply(None, a, "A")
    obj = apply(obj, b, "B", force=True)
    after = apply(obj, a2, "A", force=True)
    lb = _leaves(b)
    for p, v in lb.items():
        if p not in _leaves(a2):
            assert _value(after, p) == v  # B still holds it, so it stays with B's value


def test_a_null_map_or_list_leaves_the_live_one_and_takes_nothing():
    obj = apply(None, config(strategy={"type": "Recreate"}), "a")
    obj = apply(obj, config(strategy=None), "b")
    assert obj["spec"]["strategy"] == {"type": "Recreate"}
    assert ("f:spec", "f:strategy", "f:type") in owners(obj)["a"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"replicas": "3"}, ".spec.replicas: expected numeric (int or float), got string"),
        ({"paused": "yes"}, ".spec.paused: expected boolean, got &{yes}"),
        ({"template": 5}, ".spec.template: expected map, got &{5}"),
        ({"template": {"spec": {"containers": {"name": "c"}}}}, ".spec.template.spec.containers: expected list, got &{map[name:c]}"),
        ({"template": {"spec": {"containers": [{"name": "c", "image": 5}]}}},
         '.spec.template.spec.containers[name="c"].image: expected string, got &value.valueUnstructured{Value:5}'),
        ({"strategy": {"rollingUpdate": {"maxSurge": {"a": 1}}}}, ".spec.strategy.rollingUpdate.maxSurge: expected any scalar, got &{map[a:1]}"),
    ],
)  # fmt: skip
def test_values_of_the_wrong_type_are_refused_as_upstream_words_it(spec, message):
    with pytest.raises(errors.StatusError) as e:
        apply(None, config(**spec), "m")
    assert e.value.code == 400
    assert e.value.message == f"failed to create typed patch object (/d; apps/v1, Kind=Deployment): {message}"


def test_keys_and_values_are_ordered_as_upstream_compares_them():
    ports = {
        ("f:spec", "f:ports", 'k:{"port":10250,"protocol":"TCP"}'),
        ("f:spec", "f:ports", 'k:{"port":9376,"protocol":"TCP"}'),
    }
    assert list(to_fields_v1(ports)["f:spec"]["f:ports"]) == [
        'k:{"port":9376,"protocol":"TCP"}', 'k:{"port":10250,"protocol":"TCP"}',
    ]  # fmt: skip
    assert list(to_fields_v1({('v:"a!"',), ('v:"a"',), ("f:z",)})) == ["f:z", 'v:"a"', 'v:"a!"']


def test_a_conflict_lists_a_levels_fields_before_the_ones_below():
    live = apply(None, {**config(image="x"), "spec": {"template": {"spec": {
        "terminationGracePeriodSeconds": 5, "containers": [{"name": "c", "image": "x"}]}}}}, "a")  # fmt: skip
    other = {**config(), "spec": {"template": {"spec": {
        "terminationGracePeriodSeconds": 9, "containers": [{"name": "c", "image": "y"}]}}}}  # fmt: skip
    with pytest.raises(errors.StatusError) as e:
        apply(live, other, "b")
    assert [c["field"] for c in e.value.details["causes"]] == [
        ".spec.template.spec.terminationGracePeriodSeconds", '.spec.template.spec.containers[name="c"].image',
    ]  # fmt: skip


def test_the_update_manager_cap_counts_every_entry():
    obj = apply(None, config(replicas=1), "creator")
    for i in range(10):
        new = copy(obj)
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "v"
        fm().update(obj, new, f"labeller-{i}")
        obj = new
    new = copy(obj)
    new["spec"]["replicas"] = 4  # touches spec only: the label writers' entries are not otherwise read
    fm().update(obj, new, "scaler")
    updaters = [e for e in new["metadata"]["managedFields"] if e["operation"] == "Update"]
    assert len(updaters) == 10 and any(e["manager"] == "ancient-changes" for e in updaters)


def test_a_clients_entries_are_read_as_upstream_reads_them():
    obj = apply(None, config(image="x"), "a")
    sent = copy(obj)
    sent["metadata"]["managedFields"] = [{
        "manager": "custom", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-01T01:00:00+01:00",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name": "c"}': {"f:image": {}}}}}}},
    }]  # fmt: skip
    sent["spec"]["paused"] = True
    fm().update(obj, sent, "pauser")
    custom = next(e for e in sent["metadata"]["managedFields"] if e["manager"] == "custom")
    assert custom["time"] == "2026-01-01T00:00:00Z"
    assert 'k:{"name":"c"}' in custom["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    with pytest.raises(errors.StatusError) as e:
        apply(sent, config(image="y"), "b")
    assert '"custom" using apps/v1' in e.value.message


def test_the_last_applied_annotation_is_written_as_gos_encoder_writes_it():
    last = config(replicas=1)
    live = {
        **config(replicas=1),
        "metadata": {"name": "d", "uid": "u", "annotations": {LAST_APPLIED: orjson.dumps(last).decode()}},
    }
    fm().update(None, live, "kubectl-client-side-apply")
    obj = apply(live, config(replicas=1, labels={"cmd": "a && b <c>"}), "kubectl")
    assert '"cmd":"a \\u0026\\u0026 b \\u003cc\\u003e"' in obj["metadata"]["annotations"][LAST_APPLIED]
