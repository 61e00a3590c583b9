"""managedFields for Update operations: who owns which fields, in upstream's FieldsV1 form."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.managed_fields import default_manager, record
from pyk8s.api.schema import kind_node

DEP = kind_node("apps", "v1", "Deployment")


def dep(image: str = "nginx", replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "uid": "u", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }  # fmt: skip


def test_create_owns_every_field_it_set_in_fieldsv1_form():
    obj = dep()
    record(obj, None, DEP, "kubectl-create", "apps/v1")
    [entry] = obj["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create" and entry["operation"] == "Update" and entry["fieldsType"] == "FieldsV1"
    f = entry["fieldsV1"]
    assert f["f:metadata"] == {"f:labels": {"f:app": {}}}
    containers = f["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}


def test_update_moves_changed_fields_to_the_new_manager():
    old = dep()
    record(old, None, DEP, "creator", "apps/v1")
    new = dep(replicas=3)
    new["metadata"]["managedFields"] = old["metadata"]["managedFields"]
    record(new, old, DEP, "scaler", "apps/v1")
    by = {e["manager"]: e["fieldsV1"] for e in new["metadata"]["managedFields"]}
    assert by["scaler"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in by["creator"]["f:spec"] and "f:template" in by["creator"]["f:spec"]
    # A no-op write changes no ownership.
    again = dep(replicas=3)
    again["metadata"]["managedFields"] = new["metadata"]["managedFields"]
    record(again, new, DEP, "other", "apps/v1")
    assert {e["manager"] for e in again["metadata"]["managedFields"]} == {"creator", "scaler"}


def test_default_manager_is_the_user_agent_name():
    assert default_manager("kubectl/v1.32.4 (linux/amd64) kubernetes/abc") == "kubectl"
    assert default_manager("") == "unknown"


@pytest.mark.parametrize(
    ("group", "version", "kind", "obj"),
    [
        ("", "v1", "Pod", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "labels": {"x": "y", "a": "b"}, "annotations": {}, "uid": "u"},
            "spec": {
                "containers": [{
                    "name": "c", "image": "i", "args": ["b", "a"],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}],
                    "env": [{"name": "A", "value": "1"}], "resources": {"requests": {"cpu": "1"}},
                }],
                "tolerations": [{"key": "k", "operator": "Exists"}], "volumes": [],
            },
        }),
        ("apps", "v1", "Deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["a", "b"]},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}},
        }),
        ("", "v1", "ConfigMap", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"z": "1", "a": ""}}),
    ],
)  # fmt: skip
def test_one_pass_fieldset_equals_nested_leaves(group, version, kind, obj):
    from pyk8s.api.managed_fields import _nest, fieldset, leaves
    from pyk8s.api.schema import kind_node

    node = kind_node(group, version, kind)
    one_pass = fieldset(obj, node)
    assert one_pass == _nest(set(leaves(obj, node)))
    # The same key order too: FieldsV1 is compared as bytes by some clients.
    assert orjson.dumps(one_pass) == orjson.dumps(_nest(set(leaves(obj, node))))


def test_memoised_sections_give_the_same_field_sets_and_are_not_shared():
    from pyk8s.api import schema
    from pyk8s.api.managed_fields import _nest, fieldset, leaves

    pod_node = schema.kind_node("", "v1", "Pod")
    assert schema.kind_node("", "v1", "Pod") is pod_node  # one root node per kind, not one per call
    for image in ("nginx", "redis", "nginx"):  # the third spec repeats the first: answered from the memo
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{image}", "labels": {"app": image}},
            "spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]},
        }  # fmt: skip
        got = fieldset(pod, pod_node)
        assert got == _nest(set(leaves(pod, pod_node)))
        got["f:spec"]["f:containers"].clear()  # what a caller does with its copy stays with it
    assert fieldset(pod, pod_node)["f:spec"]["f:containers"]


def _flatten(fields, prefix=()):
    """Every leaf path of a FieldsV1 tree."""
    out = set()
    for k, v in fields.items():
        p = (*prefix, k)
        if isinstance(v, dict) and v:
            out |= _flatten(v, p)
        else:
            out.add(p)
    return out


def _reference_record(new, old, node, manager, api_version, subresource=""):
    """The straightforward rule `record` follows for updates (every leaf of both objects compared; overlaps by
    pairwise prefixes), kept as the oracle for its faster form."""
    from pyk8s.api.managed_fields import _nest, leaves

    md = new.setdefault("metadata", {})
    entries = [e for e in (md.get("managedFields") or []) if isinstance(e, dict)]
    if old is not None and "managedFields" not in md:
        entries = [e for e in ((old.get("metadata") or {}).get("managedFields") or []) if isinstance(e, dict)]
    new_leaves = leaves(new, node)
    old_leaves = leaves(old, node)
    changed = {p for p, v in new_leaves.items() if p not in old_leaves or old_leaves[p] != v}
    if not changed:
        return entries
    kept, mine = [], None
    for e in entries:
        owned = _flatten(e.get("fieldsV1") or {})
        if e.get("manager") == manager and e.get("operation") == "Update" and e.get("subresource", "") == subresource:
            mine = e
            continue
        rest = {p for p in owned if not any(p[: len(c)] == c or c[: len(p)] == p for c in changed)} if owned else owned
        if owned and not rest:
            continue
        kept.append({**e, "fieldsV1": _nest(rest)} if owned != rest else e)
    owned_now = (_flatten(mine.get("fieldsV1") or {}) if mine else set()) | changed
    owned_now = {p for p in owned_now if p in new_leaves or any(q[: len(p)] == p for q in new_leaves)}
    entry = {"manager": manager, "fieldsV1": _nest(owned_now)}
    return [*kept, entry]


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


@settings(max_examples=200, deadline=None)
@given(a=_pods, b=_pods, c=_pods, managers=st.lists(st.sampled_from(["kubectl", "kubelet", "sched"]), min_size=3, max_size=3),
       subresources=st.lists(st.sampled_from(["", "status"]), min_size=3, max_size=3))  # fmt: skip
def test_record_matches_the_plain_rule(a, b, c, managers, subresources):
    """Three writes by (possibly) different managers: each update's managedFields as the plain rule gives them."""
    pod_node = kind_node("", "v1", "Pod")
    objs = [{"apiVersion": "v1", "kind": "Pod", **x} for x in (a, b, c)]
    record(objs[0], None, pod_node, managers[0], "v1", subresources[0])
    for prev, cur, manager, sub in zip(objs, objs[1:], managers[1:], subresources[1:], strict=False):
        cur["metadata"]["managedFields"] = [dict(e) for e in prev["metadata"].get("managedFields") or []]
        want = _reference_record(orjson.loads(orjson.dumps(cur)), prev, pod_node, manager, "v1", sub)
        record(cur, prev, pod_node, manager, "v1", sub)
        got = cur["metadata"].get("managedFields") or []
        assert [(e["manager"], e["fieldsV1"]) for e in got] == [(e["manager"], e["fieldsV1"]) for e in want]


def test_fields_kept_in_an_earlier_item_of_a_duplicated_key_stay_owned():
    """Two conditions of one type: leaves merges their fields, so a field only the first has still exists, and
    its manager keeps it when another manager changes something else."""
    pod_node = kind_node("", "v1", "Pod")

    def pod(conditions, phase):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": phase, "conditions": conditions}}  # fmt: skip

    first = pod([{"type": "Ready", "status": "True", "reason": "R"}], "Pending")
    record(first, None, pod_node, "creator", "v1")
    second = pod([{"type": "Ready", "status": "True", "reason": "R"}, {"type": "Ready", "status": "True"}], "Pending")
    second["metadata"]["managedFields"] = first["metadata"]["managedFields"]
    record(second, first, pod_node, "kubelet", "v1", "status")
    third = pod(second["status"]["conditions"], "Running")
    third["metadata"]["managedFields"] = second["metadata"]["managedFields"]
    want = _reference_record(orjson.loads(orjson.dumps(third)), second, pod_node, "creator", "v1")
    record(third, second, pod_node, "creator", "v1")
    got = [(e["manager"], e["fieldsV1"]) for e in third["metadata"]["managedFields"]]
    assert got == [(e["manager"], e["fieldsV1"]) for e in want]
    creator = dict(got)["creator"]
    assert "f:reason" in creator["f:status"]["f:conditions"]['k:{"type":"Ready"}']


def test_a_create_owns_the_nodes_it_added_whole():
    from pyk8s.api.managed_fields import with_added_nodes

    zero = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None, "inner": {}}}
    fields = {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:resources": {"f:limits": {"f:cpu": {}}}}},
                   "f:inner": {"f:x": {}}, "f:securityContext": {"f:runAsUser": {}}, "f:dnsPolicy": {}},
    }  # fmt: skip
    assert with_added_nodes(fields, zero) == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {
            "f:containers": {'k:{"name":"c"}': {".": {}, "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}}}}},
            "f:inner": {"f:x": {}},
            "f:securityContext": {".": {}, "f:runAsUser": {}},
            "f:dnsPolicy": {},
        },
    }
