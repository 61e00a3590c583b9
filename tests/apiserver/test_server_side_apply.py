"""Server-side apply through real clients: `kubectl apply --server-side` (create, change, conflicts,
`--force-conflicts`, the client-side → server-side migration), `kubectl diff --server-side`, the official
Python client, apply to `/status`, and the request errors upstream answers."""

from __future__ import annotations

import json

from kubernetes import client, config

from pyk8s.api.field_manager import LAST_APPLIED

APPLY = "application/apply-patch+yaml"

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: main
        image: {image}
        ports: [{{containerPort: 80}}]
"""


def manifest(name: str, replicas: int = 1, image: str = "nginx:1") -> str:
    return DEPLOYMENT.format(name=name, replicas=replicas, image=image)


def get(cluster, ns: str, name: str) -> dict:
    res = cluster.kubectl("get", "deployment", name, "-n", ns, "-o", "json", "--show-managed-fields", check=True)
    return json.loads(res.stdout)


def entries(obj: dict) -> dict:
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e for e in obj["metadata"].get("managedFields") or []
    }


def test_kubectl_apply_server_side_creates_then_changes(cluster, ns):
    res = cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("web"), check=True)
    assert "deployment.apps/web serverside-applied" in res.stdout
    first = get(cluster, ns, "web")
    [(key, entry)] = entries(first).items()
    assert key == ("kubectl", "Apply", "")
    container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"main"}']
    assert container["f:ports"] == {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}
    assert entry["fieldsV1"]["f:spec"]["f:selector"] == {}  # an atomic struct
    assert first["spec"]["strategy"]["type"] == "RollingUpdate"  # defaults filled in after the merge

    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("web", 3, "nginx:2"), check=True)
    second = get(cluster, ns, "web")
    assert second["spec"]["replicas"] == 3
    assert second["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert second["metadata"]["generation"] == first["metadata"]["generation"] + 1
    # Applying the same again changes nothing: not even the resourceVersion.
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("web", 3, "nginx:2"), check=True)
    assert get(cluster, ns, "web")["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_a_conflict_with_another_manager_and_force_conflicts(cluster, ns):
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("db", 2), check=True)
    res = cluster.kubectl(
        "apply", "--server-side", "--field-manager=tuner", "-n", ns, "-f", "-", input=manifest("db", 5)
    )
    assert res.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in res.stderr
    assert get(cluster, ns, "db")["spec"]["replicas"] == 2  # nothing changed

    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=tuner", "-n", ns, "-f", "-",
        input=manifest("db", 5), check=True,
    )  # fmt: skip
    obj = get(cluster, ns, "db")
    assert obj["spec"]["replicas"] == 5
    owned = entries(obj)
    assert "f:replicas" in owned[("tuner", "Apply", "")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in owned[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]


def test_kubectl_scale_takes_replicas_through_the_scale_subresource(cluster, ns):
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("sc", 2), check=True)
    cluster.kubectl("scale", "deployment", "sc", "-n", ns, "--replicas=4", check=True)
    obj = get(cluster, ns, "sc")
    [scaler] = [e for (m, op, sub), e in entries(obj).items() if sub == "scale"]
    assert scaler["operation"] == "Update" and scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    res = cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("sc", 2))
    assert res.returncode != 0 and 'with subresource "scale" using apps/v1: .spec.replicas' in res.stderr


def test_kubectl_diff_server_side_shows_the_change_and_writes_nothing(cluster, ns):
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("df", 1), check=True)
    before = get(cluster, ns, "df")
    res = cluster.kubectl("diff", "--server-side", "-n", ns, "-f", "-", input=manifest("df", 4, "redis:7"))
    assert res.returncode == 1, res.stderr  # 1: differences found
    assert "-  replicas: 1" in res.stdout and "+  replicas: 4" in res.stdout
    assert "+      - image: redis:7" in res.stdout
    after = get(cluster, ns, "df")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert cluster.kubectl("diff", "--server-side", "-n", ns, "-f", "-", input=manifest("df", 1)).returncode == 0


def test_client_side_apply_migrates_to_server_side(cluster, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=manifest("mig", 1), check=True)
    assert ("kubectl-client-side-apply", "Update", "") in entries(get(cluster, ns, "mig"))
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("mig", 2, "nginx:9"), check=True)
    obj = get(cluster, ns, "mig")
    assert obj["spec"]["replicas"] == 2
    assert ("kubectl-client-side-apply", "Update", "") not in entries(obj)
    assert ("kubectl", "Apply", "") in entries(obj)
    last = json.loads(obj["metadata"]["annotations"][LAST_APPLIED])
    assert last["spec"]["replicas"] == 2  # the server keeps kubectl's annotation current


def test_the_python_client_applies(cluster, ns):
    api = client.AppsV1Api(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"a": "1", "b": "2"}}
    v1 = client.CoreV1Api(api.api_client)
    made = v1.patch_namespaced_config_map("py", ns, body, field_manager="py-ctl", _content_type=APPLY)
    assert made.data == {"a": "1", "b": "2"}
    [entry] = made.metadata.managed_fields
    assert (entry.manager, entry.operation) == ("py-ctl", "Apply")
    body["data"] = {"a": "1"}  # b is no longer applied: it goes
    again = v1.patch_namespaced_config_map("py", ns, body, field_manager="py-ctl", force=True, _content_type=APPLY)
    assert again.data == {"a": "1"}


def test_apply_to_status_owns_the_status(cluster, ns):
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("st", 1), check=True)
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/st/status?fieldManager=status-ctl"
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "st"},
            "spec": {"replicas": 9}, "status": {"observedGeneration": 1, "replicas": 1}}  # fmt: skip
    status, obj = cluster.request("PATCH", path, body, APPLY)
    assert status == 200, obj
    assert obj["spec"]["replicas"] == 1 and obj["status"]["replicas"] == 1
    entry = entries(obj)[("status-ctl", "Apply", "status")]
    assert set(entry["fieldsV1"]) == {"f:status"}


def test_apply_request_errors_are_upstreams(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"}, "data": {"a": "1"}}
    status, body = cluster.request("PATCH", f"{base}/e", cm, APPLY)
    assert status == 422 and body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    status, body = cluster.request("PATCH", f"{base}/e?force=true", {"data": {}}, "application/merge-patch+json")
    assert status == 422 and "force: Forbidden: may not be specified for non-apply patch" in body["message"]
    status, body = cluster.request("PATCH", f"{base}/e?fieldManager=m", b"a: [", APPLY)
    assert status == 400 and body["message"].startswith("error decoding YAML: ")
    status, body = cluster.request("PATCH", f"{base}/e?fieldManager=m", {**cm, "bogus": 1}, APPLY)
    # (v1.32 answers this one 500; upstream has since made it the 400 it is here)
    assert status == 400 and body["message"] == (
        "failed to create typed patch object (/e; /v1, Kind=ConfigMap): .bogus: field not declared in schema"
    )
    status, body = cluster.request(
        "PATCH", f"{base}/e?fieldManager=m", {**cm, "metadata": {"name": "e", "uid": "x"}}, APPLY
    )
    assert (
        status == 409
        and "uid mismatch: the provided object specified uid x, and no existing object was found" in body["message"]
    )
    status, body = cluster.request("PATCH", f"{base}/e?fieldManager=m", cm, APPLY)
    assert status == 201 and body["data"] == {"a": "1"}  # an apply that creates answers 201
    status, body = cluster.request("PATCH", f"{base}/e?fieldManager=m", {**cm, "kind": "Secret"}, APPLY)
    assert status == 400 and body["message"] == "invalid object type: /v1, Kind=Secret"


def test_apply_to_scale_takes_replicas_from_their_owners(cluster, ns):
    cluster.kubectl("apply", "--server-side", "-n", ns, "-f", "-", input=manifest("sa", 2), check=True)
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/sa/scale"
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "sa"}, "spec": {"replicas": 5}}
    status, body = cluster.request("PATCH", f"{path}?fieldManager=autoscaler", scale, APPLY)
    assert status == 409 and body["message"] == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    status, body = cluster.request("PATCH", f"{path}?fieldManager=autoscaler&force=true", scale, APPLY)
    assert status == 200 and body["kind"] == "Scale" and body["spec"]["replicas"] == 5
    obj = get(cluster, ns, "sa")
    assert obj["spec"]["replicas"] == 5
    owned = entries(obj)
    assert owned[("autoscaler", "Apply", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert owned[("autoscaler", "Apply", "scale")]["apiVersion"] == "apps/v1"
    assert "f:replicas" not in owned[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]
    # The same value again is no conflict for the deployment's appliers that do not mention replicas.
    status, _ = cluster.request("PATCH", f"{path}?fieldManager=autoscaler", scale, APPLY)
    assert status == 200


def test_patch_options_are_read_and_checked_as_upstream(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "po"}, "data": {"a": "1"}}
    assert cluster.request("PATCH", f"{base}/po?fieldManager=one", cm, APPLY)[0] == 201
    other = {**cm, "data": {"a": "2"}}
    assert cluster.request("PATCH", f"{base}/po?fieldManager=two", other, APPLY)[0] == 409
    status, body = cluster.request(
        "PATCH", f"{base}/po?fieldManager=two&force=1", other, APPLY
    )  # any value but false/0
    assert status == 200 and body["data"] == {"a": "2"}
    status, body = cluster.request("PATCH", f"{base}/po?fieldManager={'m' * 129}", other, APPLY)
    assert status == 422 and body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'
    )
    status, body = cluster.request("POST", f"{base}?fieldManager=a%01b", {**cm, "metadata": {"name": "po2"}})
    assert status == 422 and body["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: fieldManager: ')
    assert "invalid character U+0001 (at position 1)" in body["message"]
