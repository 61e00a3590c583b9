"""The real kubectl 1.32 against pyk8s: discovery, create/apply/get/delete, and the errors users see."""

from __future__ import annotations

import json
import textwrap

CONFIGMAP = textwrap.dedent(
    """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
      labels: {app: web}
    data:
      color: blue
    """
)


def test_version_reports_1_32(cluster):
    out = cluster.kubectl("version", "-o", "json", check=True).stdout
    server = json.loads(out)["serverVersion"]
    assert (server["major"], server["minor"]) == ("1", "32")
    assert server["gitVersion"].startswith("v1.32.0-pyk8s.")


def test_api_resources_lists_the_table(cluster):
    out = cluster.kubectl("api-resources", check=True).stdout
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "deploy" in lines["deployments"] and "apps/v1" in lines["deployments"]
    assert "po" in lines["pods"] and "true" in lines["pods"]
    assert "false" in lines["nodes"]
    assert "leases" in lines and "priorityclasses" in lines and "horizontalpodautoscalers" in lines


def test_apply_get_and_reapply(cluster, ns):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=CONFIGMAP, check=True)
    assert "configmap/settings created" in r.stdout
    got = json.loads(cluster.kubectl("get", "-n", ns, "cm", "settings", "-o", "json", check=True).stdout)
    assert got["data"] == {"color": "blue"} and got["metadata"]["labels"] == {"app": "web"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=CONFIGMAP, check=True)
    assert "configmap/settings unchanged" in r.stdout
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=CONFIGMAP.replace("blue", "green"), check=True)
    assert "configmap/settings configured" in r.stdout
    got2 = json.loads(cluster.kubectl("get", "-n", ns, "cm", "settings", "-o", "json", check=True).stdout)
    assert got2["data"] == {"color": "green"}
    assert int(got2["metadata"]["resourceVersion"]) > int(got["metadata"]["resourceVersion"])


def test_get_missing_is_not_found(cluster, ns):
    r = cluster.kubectl("get", "-n", ns, "cm", "nope")
    assert r.returncode == 1
    assert 'Error from server (NotFound): configmaps "nope" not found' in r.stderr


def test_missing_namespace_is_not_found(cluster):
    r = cluster.kubectl("apply", "-n", "no-such-ns", "-f", "-", input=CONFIGMAP)
    assert r.returncode == 1
    assert 'namespaces "no-such-ns" not found' in r.stderr


def test_invalid_name_is_422_with_upstream_message(cluster, ns):
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=CONFIGMAP.replace("name: settings", "name: Bad_Name"))
    assert r.returncode == 1
    assert 'is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain' in r.stderr


def test_unknown_field_with_strict_validation(cluster, ns):
    doc = CONFIGMAP + "bogus: 1\n"
    r = cluster.kubectl("apply", "-n", ns, "-f", "-", input=doc)
    assert r.returncode == 1
    assert 'unknown field "bogus"' in r.stderr


def test_delete(cluster, ns):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=CONFIGMAP, check=True)
    r = cluster.kubectl("delete", "-n", ns, "cm", "settings", check=True)
    assert 'configmap "settings" deleted' in r.stdout
    assert cluster.kubectl("get", "-n", ns, "cm", "settings").returncode == 1


def test_field_selector_reads_past_the_first_storage_page(cluster, ns):
    # More objects than one storage page (500): the selected ones must be found on every page, whole or in
    # chunks that kubectl follows with continue tokens.
    node = f"node-{ns}"
    for i in range(620):
        spec = {"containers": [{"name": "c", "image": "pause"}], **({"nodeName": node} if i % 10 == 3 else {})}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:03d}"}, "spec": spec}
        status, body = cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
        assert status == 201, body
    want = sorted(f"p{i:03d}" for i in range(620) if i % 10 == 3)
    for extra in ([], ["--chunk-size=7"]):
        out = cluster.kubectl("get", "pods", "-A", "--field-selector", f"spec.nodeName={node}", "-o", "name", *extra,
                              check=True).stdout  # fmt: skip
        assert sorted(line.removeprefix("pod/") for line in out.split()) == want
