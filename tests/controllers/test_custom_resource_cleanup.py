"""Custom resources are cleaned up like built-in ones: the garbage collector follows owner references to and
from them (it finds what CRDs define through discovery), and deleting a namespace deletes the custom
resources in it."""

from __future__ import annotations

import json
import time

import pytest

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.gc.example.com
spec:
  group: gc.example.com
  scope: Namespaced
  names: {plural: backups, singular: backup, kind: Backup}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""


def backup(name: str, owner: dict | None = None) -> str:
    md: dict = {"name": name}
    if owner is not None:
        md["ownerReferences"] = [owner]
    return json.dumps({"apiVersion": "gc.example.com/v1", "kind": "Backup", "metadata": md, "spec": {"x": 1}})


def config_map(name: str, owner: dict | None = None) -> str:
    md: dict = {"name": name}
    if owner is not None:
        md["ownerReferences"] = [owner]
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md})


def ref(obj: dict) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"]}  # fmt: skip


def create(cluster, ns: str, manifest: str) -> dict:
    out = cluster.kubectl("create", "-n", ns, "-f", "-", "-o", "json", input=manifest, check=True).stdout
    return json.loads(out)


def gone(cluster, *args: str, timeout: float = 30.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cluster.kubectl("get", *args).returncode != 0:
            return True
        time.sleep(0.3)
    return False


@pytest.fixture(scope="module")
def backups(cluster):
    cluster.apply_crds(CRD, "backups.gc.example.com")
    yield cluster
    cluster.kubectl("delete", "crd", "backups.gc.example.com", "--wait=false")


def test_dependents_of_a_custom_resource_go_with_it(backups, ns):
    owner = create(backups, ns, backup("nightly"))
    create(backups, ns, config_map("nightly-config", ref(owner)))
    backups.kubectl("delete", "backup", "nightly", "-n", ns, check=True)
    assert gone(backups, "configmap", "nightly-config", "-n", ns)


def test_a_custom_resource_owned_by_a_built_in_object_goes_with_it(backups, ns):
    owner = create(backups, ns, config_map("settings"))
    create(backups, ns, backup("weekly", ref(owner)))
    backups.kubectl("delete", "configmap", "settings", "-n", ns, check=True)
    assert gone(backups, "backup", "weekly", "-n", ns)


def test_foreground_deletion_waits_for_custom_dependents(backups, ns):
    owner = create(backups, ns, backup("parent"))
    create(backups, ns, backup("child", ref(owner) | {"blockOwnerDeletion": True}))
    backups.kubectl("delete", "backup", "parent", "-n", ns, "--cascade=foreground", "--wait=false", check=True)
    assert gone(backups, "backup", "child", "-n", ns)
    assert gone(backups, "backup", "parent", "-n", ns)


def test_deleting_a_namespace_deletes_its_custom_resources(backups):
    backups.create_namespace("crd-ns-cleanup")
    create(backups, "crd-ns-cleanup", backup("b1"))
    backups.kubectl("delete", "namespace", "crd-ns-cleanup", "--wait=false", check=True)
    assert gone(backups, "namespace", "crd-ns-cleanup", timeout=60)
    status, _ = backups.request("GET", "/apis/gc.example.com/v1/namespaces/crd-ns-cleanup/backups/b1")
    assert status == 404
