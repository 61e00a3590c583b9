"""kubectl's everyday commands on workloads, as against a real cluster: apply and re-apply a multi-document
file, every `get` output form, label/annotate/patch/scale/replace, run, dry runs, diff, describe, watch,
wait and delete."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time

import yaml

APP = textwrap.dedent(
    """
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: web-config, labels: {app: web}}
    data: {greeting: hello}
    ---
    apiVersion: v1
    kind: Secret
    metadata: {name: web-secret}
    stringData: {password: s3cret}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
          - name: nginx
            image: nginx:1.25
            ports: [{containerPort: 80}]
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: web}
    spec:
      selector: {app: web}
      ports: [{port: 80, targetPort: 80}]
    """
)


def k(cluster, ns, *args, **kw):
    return cluster.kubectl("-n", ns, *args, **kw)


def test_apply_multi_document_file_and_reapply_with_a_change(cluster, ns):
    out = k(cluster, ns, "apply", "-f", "-", input=APP, check=True).stdout
    assert out.split("\n")[:4] == [
        "configmap/web-config created",
        "secret/web-secret created",
        "deployment.apps/web created",
        "service/web created",
    ]
    dep = json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)
    assert dep["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    assert dep["spec"]["revisionHistoryLimit"] == 10 and dep["spec"]["progressDeadlineSeconds"] == 600
    assert dep["metadata"]["generation"] == 1
    svc = json.loads(k(cluster, ns, "get", "svc", "web", "-o", "json", check=True).stdout)
    assert svc["spec"]["clusterIP"].startswith("10.") and svc["spec"]["type"] == "ClusterIP"
    secret = json.loads(k(cluster, ns, "get", "secret", "web-secret", "-o", "json", check=True).stdout)
    assert secret["data"] == {"password": "czNjcmV0"} and secret["type"] == "Opaque"
    # Change the image only: exactly that changes, the generation moves, everything else is unchanged.
    out = k(cluster, ns, "apply", "-f", "-", input=APP.replace("nginx:1.25", "nginx:1.27"), check=True).stdout
    assert "deployment.apps/web configured" in out
    assert "configmap/web-config unchanged" in out and "service/web unchanged" in out
    dep2 = json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)
    assert dep2["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert dep2["metadata"]["generation"] == 2
    assert dep2["spec"]["replicas"] == 2
    svc2 = json.loads(k(cluster, ns, "get", "svc", "web", "-o", "json", check=True).stdout)
    assert svc2["spec"]["clusterIP"] == svc["spec"]["clusterIP"]


def test_get_output_forms(cluster, ns):
    k(cluster, ns, "apply", "-f", "-", input=APP, check=True)
    table = k(cluster, ns, "get", "deploy", check=True).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["web", "0/2", "0", "0"]
    wide = k(cluster, ns, "get", "deploy", "-o", "wide", check=True).stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[-3:] == ["nginx", "nginx:1.25", "app=web"]
    svc = k(cluster, ns, "get", "svc", "web", check=True).stdout.splitlines()
    assert svc[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1].split()[1] == "ClusterIP" and svc[1].split()[3:5] == ["<none>", "80/TCP"]
    assert k(cluster, ns, "get", "cm,secret", "-o", "name", check=True).stdout.split() == [
        "configmap/web-config", "secret/web-secret"]  # fmt: skip
    doc = yaml.safe_load(k(cluster, ns, "get", "cm", "web-config", "-o", "yaml", check=True).stdout)
    assert doc["data"] == {"greeting": "hello"}
    jp = k(cluster, ns, "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}", check=True)
    assert jp.stdout == "nginx:1.25"
    cc = k(cluster, ns, "get", "cm", "-o", "custom-columns=NAME:.metadata.name,GREETING:.data.greeting", check=True)
    assert cc.stdout.split() == ["NAME", "GREETING", "web-config", "hello"]
    labels = k(cluster, ns, "get", "cm", "web-config", "--show-labels", check=True).stdout
    assert "app=web" in labels
    assert k(cluster, ns, "get", "cm", "-l", "app=web", "-o", "name", check=True).stdout.split() == [
        "configmap/web-config"
    ]
    assert k(cluster, ns, "get", "cm", "-l", "app=other", "-o", "name", check=True).stdout.strip() == ""
    fs = k(cluster, ns, "get", "secrets", "--field-selector", "type=Opaque", "-o", "name", check=True)
    assert fs.stdout.split() == ["secret/web-secret"]
    everywhere = cluster.kubectl("get", "cm", "-A", check=True).stdout
    assert ns in everywhere and "web-config" in everywhere
    k(cluster, ns, "apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aaa}\n", check=True)
    by_name = k(cluster, ns, "get", "cm", "--sort-by=.metadata.name", "-o", "name", check=True).stdout.split()
    assert by_name == sorted(by_name)
    all_out = k(cluster, ns, "get", "all", check=True).stdout
    assert "deployment.apps/web" in all_out and "service/web" in all_out


def test_label_annotate_patch_scale_replace(cluster, ns):
    k(cluster, ns, "apply", "-f", "-", input=APP, check=True)
    assert "labeled" in k(cluster, ns, "label", "cm", "web-config", "tier=front", check=True).stdout
    assert "annotated" in k(cluster, ns, "annotate", "cm", "web-config", "note=hi", check=True).stdout
    k(cluster, ns, "patch", "cm", "web-config", "--type=merge", "-p", '{"data":{"extra":"1"}}', check=True)
    k(
        cluster,
        ns,
        "patch",
        "cm",
        "web-config",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/data/greeting","value":"hey"}]',
        check=True,
    )
    k(
        cluster,
        ns,
        "patch",
        "deploy",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}',
        check=True,
    )
    cm = json.loads(k(cluster, ns, "get", "cm", "web-config", "-o", "json", check=True).stdout)
    assert cm["metadata"]["labels"]["tier"] == "front" and cm["metadata"]["annotations"]["note"] == "hi"
    assert cm["data"] == {"greeting": "hey", "extra": "1"}
    dep = json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)
    assert [c["image"] for c in dep["spec"]["template"]["spec"]["containers"]] == ["nginx:2"]
    assert "scaled" in k(cluster, ns, "scale", "deploy", "web", "--replicas=5", check=True).stdout
    assert json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)["spec"]["replicas"] == 5
    r = k(cluster, ns, "scale", "deploy", "web", "--replicas=3", "--current-replicas=4")
    assert r.returncode == 1 and "expected" in r.stderr.lower()
    dep = json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)
    dep["spec"]["replicas"] = 1
    out = k(cluster, ns, "replace", "-f", "-", input=json.dumps(dep), check=True).stdout
    assert "replaced" in out
    # Replacing with a stale resourceVersion is a conflict, as the user would see it.
    r = k(cluster, ns, "replace", "-f", "-", input=json.dumps(dep))
    assert r.returncode == 1 and "the object has been modified" in r.stderr
    # The selector of a Deployment is immutable.
    dep = json.loads(k(cluster, ns, "get", "deploy", "web", "-o", "json", check=True).stdout)
    dep["spec"]["selector"]["matchLabels"]["x"] = "y"
    dep["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    r = k(cluster, ns, "replace", "-f", "-", input=json.dumps(dep))
    assert r.returncode == 1 and "spec.selector: Invalid value" in r.stderr and "field is immutable" in r.stderr


def test_run_dry_run_server_and_diff(cluster, ns):
    out = k(cluster, ns, "run", "solo", "--image=busybox", "--restart=Never", check=True).stdout
    assert "pod/solo created" in out
    pod = json.loads(k(cluster, ns, "get", "pod", "solo", "-o", "json", check=True).stdout)
    assert pod["spec"]["restartPolicy"] == "Never" and pod["status"]["phase"] == "Pending"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert pod["status"]["qosClass"] == "BestEffort"
    out = k(cluster, ns, "apply", "--dry-run=server", "-f", "-", input=APP, check=True).stdout
    assert "(server dry run)" in out
    assert k(cluster, ns, "get", "deploy", "web").returncode == 1  # nothing was stored
    k(cluster, ns, "apply", "-f", "-", input=APP, check=True)
    same = k(cluster, ns, "diff", "-f", "-", input=APP)
    assert same.returncode == 0, same.stderr
    changed = k(cluster, ns, "diff", "-f", "-", input=APP.replace("hello", "bonjour"))
    assert (
        changed.returncode == 1 and "-  greeting: hello" in changed.stdout and "+  greeting: bonjour" in changed.stdout
    )


def test_describe_shows_events(cluster, ns):
    k(cluster, ns, "run", "p", "--image=busybox", "--restart=Never", check=True)
    pod = json.loads(k(cluster, ns, "get", "pod", "p", "-o", "json", check=True).stdout)
    event = {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "p.1"}, "type": "Normal", "reason": "Scheduled",
        "message": "Successfully assigned to node-1", "source": {"component": "default-scheduler"}, "count": 1,
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns, "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
        "firstTimestamp": pod["metadata"]["creationTimestamp"], "lastTimestamp": pod["metadata"]["creationTimestamp"],
    }  # fmt: skip
    k(cluster, ns, "create", "-f", "-", input=json.dumps(event), check=True)
    out = k(cluster, ns, "describe", "pod", "p", check=True).stdout
    assert "Name:" in out and "busybox" in out
    assert "Events:" in out and "Scheduled" in out and "Successfully assigned to node-1" in out


def test_get_watch_prints_changes_from_another_client(cluster, ns):
    k(cluster, ns, "apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n", check=True)
    env_cmd = ["-n", ns, "get", "cm", "-w", "--request-timeout=15s"]
    from pyk8s.testing.cluster import kubectl_binary

    proc = subprocess.Popen(
        [kubectl_binary(), *env_cmd],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig)},
    )  # fmt: skip
    try:
        time.sleep(1.5)
        k(
            cluster,
            ns,
            "apply",
            "-f",
            "-",
            input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: second}\n",
            check=True,
        )
        k(cluster, ns, "delete", "cm", "first", check=True)
        time.sleep(1.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    lines = [ln.split()[0] for ln in out.splitlines() if ln.strip()]
    assert lines[:2] == ["NAME", "first"]
    assert "second" in lines[2:]


def test_wait_for_delete_and_delete_forms(cluster, ns):
    for name in ("d1", "d2", "d3"):
        k(
            cluster,
            ns,
            "apply",
            "-f",
            "-",
            input=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, labels: {{grp: x}}}}\n",
            check=True,
        )
    waiter = subprocess.Popen(
        [__import__("pyk8s.testing.cluster", fromlist=["kubectl_binary"]).kubectl_binary(),
         "-n", ns, "wait", "--for=delete", "cm/d1", "--timeout=20s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig)},
    )  # fmt: skip
    time.sleep(1)
    assert 'configmap "d1" deleted' in k(cluster, ns, "delete", "cm", "d1", check=True).stdout
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    out = k(cluster, ns, "delete", "cm", "-l", "grp=x", check=True).stdout
    assert 'configmap "d2" deleted' in out and 'configmap "d3" deleted' in out
    k(cluster, ns, "apply", "-f", "-", input=APP, check=True)
    out = k(cluster, ns, "delete", "cm,secret", "--all", check=True).stdout
    assert "web-config" in out and "web-secret" in out
    r = k(cluster, ns, "delete", "cm", "web-config")
    assert r.returncode == 1 and "NotFound" in r.stderr
