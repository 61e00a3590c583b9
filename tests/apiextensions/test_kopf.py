"""A kopf operator against pyk8s: its create, update and delete handlers run on a custom resource, it
patches the resource's status, holds deletion with its finalizer until the delete handler has run, and
announces itself in its peering object — as it does on a real cluster."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

kopf_testing = pytest.importorskip("kopf.testing")

GROUP = "kopf.example.com"

CRDS = f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterkopfpeerings.kopf.dev
spec:
  scope: Cluster
  group: kopf.dev
  names: {{kind: ClusterKopfPeering, plural: clusterkopfpeerings, singular: clusterkopfpeering}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kopfpeerings.kopf.dev
spec:
  scope: Namespaced
  group: kopf.dev
  names: {{kind: KopfPeering, plural: kopfpeerings, singular: kopfpeering}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: greetings.{GROUP}
spec:
  scope: Namespaced
  group: {GROUP}
  names: {{kind: Greeting, plural: greetings, singular: greeting}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              name: {{type: string}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"""

OPERATOR = f"""
import base64
import os

import kopf
import yaml

@kopf.on.login()
def login(**_):
    # The kubeconfig pyk8s wrote for its admin (client certificate), read as kopf's own loaders would.
    with open(os.environ["PYK8S_KUBECONFIG"]) as f:
        config = yaml.safe_load(f)
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    return kopf.ConnectionInfo(
        server=cluster["server"],
        ca_data=base64.b64decode(cluster["certificate-authority-data"]),
        certificate_data=base64.b64decode(user["client-certificate-data"]),
        private_key_data=base64.b64decode(user["client-key-data"]),
        default_namespace="default",
    )

@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 10
    settings.peering.name = "pyk8s-test"
    settings.peering.mandatory = True

@kopf.on.create("{GROUP}", "v1", "greetings")
def created(spec, patch, **_):
    patch.status["greeting"] = "hello " + spec.get("name", "")
    return {{"handled": "create"}}

@kopf.on.update("{GROUP}", "v1", "greetings")
def updated(spec, diff, patch, **_):
    patch.status["greeting"] = "hello again " + spec.get("name", "")
    patch.status["changed"] = [list(d[1]) for d in diff]

@kopf.on.delete("{GROUP}", "v1", "greetings")
def deleted(name, namespace, **_):
    with open(__file__ + ".deleted", "a") as f:
        f.write(f"{{namespace}}/{{name}}\\n")
"""


def wait_for(what: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("timed out waiting")


def get(cluster, *args: str) -> dict[str, Any] | None:
    res = cluster.kubectl("get", *args, "-o", "json")
    return json.loads(res.stdout) if res.returncode == 0 else None


def test_a_kopf_operator_handles_a_custom_resource(crd_cluster, crd_ns, tmp_path: Path, monkeypatch):
    cluster = crd_cluster
    cluster.apply_crds(CRDS, "clusterkopfpeerings.kopf.dev", "kopfpeerings.kopf.dev", f"greetings.{GROUP}")
    cluster.kubectl("apply", "-f", "-", check=True, input=yaml.safe_dump(
        {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "pyk8s-test"}}))  # fmt: skip
    operator = tmp_path / "operator.py"
    operator.write_text(textwrap.dedent(OPERATOR))
    monkeypatch.setenv("PYK8S_KUBECONFIG", str(cluster.kubeconfig))
    greeting = {"apiVersion": f"{GROUP}/v1", "kind": "Greeting", "metadata": {"name": "hi"}, "spec": {"name": "pyk8s"}}

    with kopf_testing.KopfRunner(["run", "--all-namespaces", "--verbose", str(operator)], timeout=60) as runner:
        cluster.kubectl("apply", "-n", crd_ns, "-f", "-", input=yaml.safe_dump(greeting), check=True)
        obj = wait_for(lambda: (o := get(cluster, "greeting", "hi", "-n", crd_ns)) and
                       (o.get("status") or {}).get("greeting") == "hello pyk8s" and o)  # fmt: skip
        assert obj["status"]["created"] == {"handled": "create"}  # a handler's result, in the status
        assert "kopf.zalando.org/KopfFinalizerMarker" in obj["metadata"]["finalizers"]

        greeting["spec"]["name"] = "world"
        cluster.kubectl("apply", "-n", crd_ns, "-f", "-", input=yaml.safe_dump(greeting), check=True)
        obj = wait_for(lambda: (o := get(cluster, "greeting", "hi", "-n", crd_ns)) and
                       (o.get("status") or {}).get("greeting") == "hello again world" and o)  # fmt: skip
        assert ["spec", "name"] in obj["status"]["changed"]

        # The peering object lists this operator while it runs.
        peering = wait_for(lambda: (p := get(cluster, "clusterkopfpeering", "pyk8s-test")) and p.get("status") and p)
        assert any(isinstance(v, dict) and "lastseen" in v for v in peering["status"].values())

        # Deletion waits for the delete handler, then the finalizer goes and so does the object.
        cluster.kubectl("delete", "greeting", "hi", "-n", crd_ns, "--timeout=30s", check=True)
        assert get(cluster, "greeting", "hi", "-n", crd_ns) is None
        marker = Path(str(operator) + ".deleted")
        assert marker.read_text().splitlines() == [f"{crd_ns}/hi"]
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None
    assert "Traceback" not in runner.output, runner.output
