"""managedFields for Update operations (creates, updates, patches): who owns which fields, in upstream's FieldsV1
form; the fast create path checked against the general rule."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.field_manager import FieldManager
from pyk8s.api.managed_fields import default_manager, record_create
from pyk8s.api.schema import kind_node
from pyk8s.api.structured_merge.fieldpath import from_fields_v1
from pyk8s.api.structured_merge.typed import is_associative, item_element
from pyk8s.api.types.codec import codec_for

DEP = kind_node("apps", "v1", "Deployment")


def dep(image: str = "nginx", replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "uid": "u", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }  # fmt: skip


def zero(group: str, version: str, kind: str) -> dict:
    return codec_for(group, version, kind).decoder.zero()


def manager(group: str, version: str, kind: str, subresource: str = "") -> FieldManager:
    api_version = f"{group}/{version}" if group else version
    node = kind_node(group, version, kind)
    reset = (("f:status",),) if not subresource else (("f:spec",), ("f:metadata", "f:labels"))
    return FieldManager(node, api_version, kind, subresource, zero(group, version, kind), reset)


def by_manager(obj: dict) -> dict:
    return {(e["manager"], e.get("subresource", "")): e["fieldsV1"] for e in obj["metadata"].get("managedFields") or []}


def test_create_owns_every_field_it_set_in_fieldsv1_form():
    obj = dep()
    record_create(obj, DEP, "kubectl-create", "apps/v1", zero("apps", "v1", "Deployment"))
    [entry] = obj["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create" and entry["operation"] == "Update" and entry["fieldsType"] == "FieldsV1"
    f = entry["fieldsV1"]
    assert f["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    containers = f["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}


def test_update_moves_changed_fields_to_the_new_manager():
    fm = manager("apps", "v1", "Deployment")
    old = dep()
    record_create(old, DEP, "creator", "apps/v1", zero("apps", "v1", "Deployment"))
    new = dep(replicas=3)
    fm.update(old, new, "scaler")
    by = {m: f for (m, _), f in by_manager(new).items()}
    assert by["scaler"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in by["creator"]["f:spec"] and "f:template" in by["creator"]["f:spec"]
    # A no-op write changes no ownership.
    again = dep(replicas=3)
    fm.update(new, again, "other")
    assert {m for m, _ in by_manager(again)} == {"creator", "scaler"}


def test_an_update_that_adds_a_map_owns_the_map_itself():
    """Upstream's comparison adds a node that appears whole: labels added to an object that had none."""
    fm = manager("", "v1", "ConfigMap")
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}
    record_create(old, kind_node("", "v1", "ConfigMap"), "creator", "v1", zero("", "v1", "ConfigMap"))
    new = orjson.loads(orjson.dumps(old))
    new["metadata"]["labels"] = {"x": "y"}
    fm.update(old, new, "kubectl-label")
    assert by_manager(new)[("kubectl-label", "")] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}}


def test_an_untracked_object_stays_untracked_until_an_apply():
    fm = manager("", "v1", "ConfigMap")
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}
    new = {**old, "data": {"a": "2"}}
    fm.update(old, new, "someone")
    assert "managedFields" not in new["metadata"]


def test_managed_fields_sent_empty_reset_tracking_and_at_most_ten_update_managers_are_kept():
    fm = manager("", "v1", "ConfigMap")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    record_create(obj, kind_node("", "v1", "ConfigMap"), "creator", "v1", zero("", "v1", "ConfigMap"))
    obj["metadata"]["uid"] = "u"
    for i in range(12):
        new = orjson.loads(orjson.dumps(obj))
        new["data"][f"k{i}"] = "v"
        fm.update(obj, new, f"writer-{i}")
        obj = new
    names = [m for m, _ in by_manager(obj)]
    assert len(names) == 10 and "ancient-changes" in names
    ancient = by_manager(obj)[("ancient-changes", "")]
    assert "f:k0" in ancient["f:data"] and "f:k1" in ancient["f:data"]  # the oldest, merged
    reset = orjson.loads(orjson.dumps(obj))
    reset["metadata"]["managedFields"] = []
    reset["data"]["z"] = "1"
    fm.update(obj, reset, "resetter")
    assert "managedFields" not in reset["metadata"]


def test_default_manager_is_the_user_agent_name():
    assert default_manager("kubectl/v1.32.4 (linux/amd64) kubernetes/abc") == "kubectl"
    assert default_manager("") == "unknown"


@pytest.mark.parametrize(
    ("group", "version", "kind", "obj"),
    [
        ("", "v1", "Pod", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "labels": {"x": "y", "a": "b"}, "annotations": {}, "uid": "u",
                         "generateName": "a-"},
            "spec": {
                "containers": [{
                    "name": "c", "image": "i", "args": ["b", "a"],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}],
                    "env": [{"name": "A", "value": "1"}], "resources": {"requests": {"cpu": "1"}},
                }],
                "tolerations": [{"key": "k", "operator": "Exists"}], "volumes": [],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}},
            },
        }),
        ("apps", "v1", "Deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["a", "b"]},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}},
        }),
        ("", "v1", "ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"z": "1", "a": ""}}),
        ("", "v1", "Service", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                               "spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}], "selector": {"a": "b"}}}),
    ],
)  # fmt: skip
def test_the_fast_create_path_equals_the_general_rule(group, version, kind, obj):
    """A create is an Update from the kind's zero value: the one-pass field set (memoised for workloads)
    gives what the general comparison gives, in the same key order."""
    node = kind_node(group, version, kind)
    api_version = obj["apiVersion"]
    fast = orjson.loads(orjson.dumps(obj))
    record_create(fast, node, "m", api_version, zero(group, version, kind))
    general = orjson.loads(orjson.dumps(obj))
    manager(group, version, kind).update(None, general, "m")
    assert [orjson.dumps(f) for f in by_manager(fast).values()] == [
        orjson.dumps(f) for f in by_manager(general).values()
    ]


_containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"]), "image": st.sampled_from(["x", "y"])},
        optional={"args": st.lists(st.sampled_from(["1", "2"]), max_size=2), "ports": st.lists(
            st.fixed_dictionaries({"containerPort": st.sampled_from([80, 81])}), max_size=2)},
    ),
    min_size=1, max_size=3, unique_by=lambda c: c["name"],
)  # fmt: skip
_status = st.fixed_dictionaries(
    {}, optional={"phase": st.sampled_from(["Pending", "Running"]), "podIP": st.sampled_from(["10.0.0.1", "10.0.0.2"]),
                  "conditions": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Ready", "Initialized"]),
                                                                "status": st.sampled_from(["True", "False"])},
                                                               optional={"reason": st.just("R")}),
                                         max_size=3),  # duplicate types too: leaves merges their fields
                  "containerStatuses": st.lists(st.fixed_dictionaries(
                      {"name": st.sampled_from(["a", "b"])},
                      optional={"state": st.sampled_from([{}, {"running": {"startedAt": "t"}},
                                                          {"waiting": {"reason": "ContainerCreating"}}])}),
                      max_size=2),
                  "hostIPs": st.lists(st.fixed_dictionaries({"ip": st.sampled_from(["1.1.1.1", "2.2.2.2"])}),
                                      max_size=3)},
)  # fmt: skip
_pods = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({"name": st.just("p")}, optional={
        "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2),
        "finalizers": st.lists(st.sampled_from(["x/a", "x/b"]), max_size=3),
        "annotations": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"]), max_size=2)}),
     "spec": st.fixed_dictionaries({"containers": _containers}, optional={"nodeName": st.sampled_from(["n1", "n2"])})},
    optional={"status": _status},
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(a=_pods, b=_pods, c=_pods, managers=st.lists(st.sampled_from(["kubectl", "kubelet", "sched"]), min_size=3, max_size=3),
       subresources=st.lists(st.sampled_from(["", "status"]), min_size=2, max_size=2))  # fmt: skip
def test_updates_keep_ownership_consistent(a, b, c, managers, subresources):
    """Three writes by (possibly) different managers: the fast create path equals the general rule; after
    each update its manager owns every field it changed, nobody else does, and every owned field exists."""
    pod_node = kind_node("", "v1", "Pod")
    objs = [{"apiVersion": "v1", "kind": "Pod", **x} for x in (a, b, c)]
    general = orjson.loads(orjson.dumps(objs[0]))
    record_create(objs[0], pod_node, managers[0], "v1", zero("", "v1", "Pod"))
    FieldManager(pod_node, "v1", "Pod", "", zero("", "v1", "Pod")).update(None, general, managers[0])
    assert by_manager(general) == by_manager(objs[0])
    objs[0]["metadata"]["uid"] = "u"
    for prev, cur, m, sub in zip(objs, objs[1:], managers[1:], subresources, strict=False):
        if sub == "status":  # a status write changes the status only
            cur.update({k: v for k, v in prev.items() if k != "status"})
            cur["metadata"] = orjson.loads(orjson.dumps(prev["metadata"]))
        else:  # and a write to the main resource leaves the status as it was (the strategy's reset)
            cur.pop("status", None)
            if "status" in prev:
                cur["status"] = prev["status"]
        cur["metadata"].pop("managedFields", None)
        fm = manager("", "v1", "Pod", sub)
        fm.update(prev, cur, m)
        cur["metadata"]["uid"] = "u"
        cmp = fm.updater.comparison(_bare(prev), _bare(cur))
        changed = {p for p in cmp.added | cmp.modified if p[:2] != ("f:metadata", "f:uid")}
        owned = {key: from_fields_v1(f) for key, f in by_manager(cur).items()}
        assert changed <= owned.get((m, sub), set())
        for key, paths in owned.items():
            if key != (m, sub):
                assert not paths & changed
            assert paths <= _present(_bare(cur), pod_node)


def _present(value, node, path=()) -> set:
    """The path of every node `value` has (fields, keyed items), empty ones included."""
    out = {path}
    if isinstance(value, dict):
        for k, v in value.items():
            out |= _present(v, node.child(k) if node is not None else None, (*path, "f:" + k))
    elif isinstance(value, list) and node is not None and is_associative(node):
        for item in value:
            out |= _present(item, node.items(), (*path, item_element(item, node)))
    return out


def _bare(obj: dict) -> dict:
    md = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": md}
