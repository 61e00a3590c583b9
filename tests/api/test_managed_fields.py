"""managedFields for Update operations: who owns which fields, in upstream's FieldsV1 form."""

from __future__ import annotations

import orjson
import pytest

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
