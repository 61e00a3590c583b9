"""Deployments as a user drives them with kubectl on a cluster of real parts: `pyk8s apiserver`, three simulated
nodes (`pyk8s nodes`), the scheduler and the controller manager, each its own process. Rollouts end as `kubectl
rollout status` says on a real cluster; a rolling update keeps the availability maxUnavailable promises; history,
undo, scale, pause/resume, Recreate, the progress deadline, and cascading deletion."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for

NS = "default"


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def deployment(name: str, replicas: int, image: str = "nginx:1", strategy: dict[str, Any] | None = None,
               **spec: Any) -> str:  # fmt: skip
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}, **spec},
    }  # fmt: skip
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    return json.dumps(body)


def rollout_status(cluster: APIServerProcess, name: str, timeout: str = "90s") -> Any:
    return cluster.kubectl("rollout", "status", f"deploy/{name}", f"--timeout={timeout}", timeout=120)


def replica_sets(cluster: APIServerProcess, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl_json(cluster, "get", "rs", "-l", f"app={app}")["items"]
    return sorted(items, key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))


def events_of(cluster: APIServerProcess, name: str) -> list[str]:
    items = kubectl_json(cluster, "get", "events", "--field-selector", f"involvedObject.name={name}")["items"]
    return [e["message"] for e in items if e["reason"] == "ScalingReplicaSet"]


def test_create_and_roll_out(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("web", 3), check=True)
    res = rollout_status(cluster, "web")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
    d = kubectl_json(cluster, "get", "deploy", "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    st = d["status"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"], st["availableReplicas"]) == (3, 3, 3, 3)
    conds = {c["type"]: (c["status"], c["reason"]) for c in st["conditions"]}
    assert conds == {"Available": ("True", "MinimumReplicasAvailable"),
                     "Progressing": ("True", "NewReplicaSetAvailable")}  # fmt: skip
    [rs] = replica_sets(cluster, "web")
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"  # 3 + 25% rounded up
    pods = kubectl_json(cluster, "get", "pods", "-l", "app=web")["items"]
    assert len(pods) == 3 and {p["status"]["phase"] for p in pods} == {"Running"}
    assert all(p["metadata"]["name"].startswith(f"web-{pod_hash}-") for p in pods)
    assert f"Scaled up replica set web-{pod_hash} from 0 to 3" in events_of(cluster, "web")


def test_rolling_update_keeps_availability_then_history_and_undo(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("roll", 4), check=True)
    assert rollout_status(cluster, "roll").returncode == 0
    # maxUnavailable 25% of 4 = 1: while the new image rolls out, at least 3 pods stay available.
    least = [4]
    stop = threading.Event()

    def sample() -> None:
        # The pods themselves, as a user's traffic would see them: Ready and not being deleted.
        while not stop.is_set():
            res = cluster.kubectl("get", "pods", "-l", "app=roll", "-o", "json")
            if res.returncode == 0:
                pods = json.loads(res.stdout)["items"]
                up = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp") and any(
                    c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))  # fmt: skip
                least[0] = min(least[0], up)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        cluster.kubectl("set", "image", "deploy/roll", "c=nginx:2", check=True)
        res = rollout_status(cluster, "roll")
    finally:
        stop.set()
        sampler.join()
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'Waiting for deployment "roll" rollout to finish' in res.stdout
    assert least[0] >= 3, f"availability fell to {least[0]}"
    old, new = replica_sets(cluster, "roll")
    assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    messages = events_of(cluster, "roll")
    assert any(m.startswith(f"Scaled down replica set {old['metadata']['name']} from ") for m in messages)
    history = cluster.kubectl("rollout", "history", "deploy/roll", check=True).stdout
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"]

    assert (
        cluster.kubectl("rollout", "undo", "deploy/roll", check=True).stdout.strip()
        == "deployment.apps/roll rolled back"
    )
    assert rollout_status(cluster, "roll").returncode == 0
    again, latest = replica_sets(cluster, "roll")
    # The first ReplicaSet is the new one again, with the next revision; it remembers its old one.
    assert latest["metadata"]["uid"] == old["metadata"]["uid"]
    assert latest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert latest["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert latest["spec"]["replicas"] == 4 and again["spec"]["replicas"] == 0
    d = kubectl_json(cluster, "get", "deploy", "roll")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


def test_scale_pause_and_resume(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("knob", 2), check=True)
    assert rollout_status(cluster, "knob").returncode == 0
    cluster.kubectl("scale", "deploy/knob", "--replicas=5", check=True)
    assert rollout_status(cluster, "knob").returncode == 0
    assert kubectl_json(cluster, "get", "deploy", "knob")["status"]["availableReplicas"] == 5

    assert (
        cluster.kubectl("rollout", "pause", "deploy/knob", check=True).stdout.strip() == "deployment.apps/knob paused"
    )

    def progressing() -> tuple[str, str]:
        conds = kubectl_json(cluster, "get", "deploy", "knob")["status"]["conditions"]
        c = next(c for c in conds if c["type"] == "Progressing")
        return c["status"], c["reason"]

    wait_for("the paused condition", lambda: progressing() == ("Unknown", "DeploymentPaused"))
    cluster.kubectl("set", "image", "deploy/knob", "c=nginx:2", check=True)
    time.sleep(1.0)
    assert len(replica_sets(cluster, "knob")) == 1  # paused: no rollout
    cluster.kubectl("rollout", "resume", "deploy/knob", check=True)
    assert rollout_status(cluster, "knob").returncode == 0
    rss = replica_sets(cluster, "knob")
    assert [rs["spec"]["replicas"] for rs in rss] == [0, 5]
    # `rollout restart` stamps the template: a new ReplicaSet replaces every pod.
    out = cluster.kubectl("rollout", "restart", "deploy/knob", check=True).stdout.strip()
    assert out == "deployment.apps/knob restarted"
    assert rollout_status(cluster, "knob").returncode == 0
    rss = replica_sets(cluster, "knob")
    assert [rs["spec"]["replicas"] for rs in rss] == [0, 0, 5]
    assert "kubectl.kubernetes.io/restartedAt" in rss[-1]["spec"]["template"]["metadata"]["annotations"]


def test_recreate_scales_old_pods_away_before_new_ones(cluster):
    cluster.kubectl("apply", "-f", "-", input=deployment("redo", 2, strategy={"type": "Recreate"}), check=True)
    assert rollout_status(cluster, "redo").returncode == 0
    cluster.kubectl("set", "image", "deploy/redo", "c=nginx:2", check=True)
    assert rollout_status(cluster, "redo").returncode == 0
    old, new = replica_sets(cluster, "redo")
    messages = events_of(cluster, "redo")
    down = f"Scaled down replica set {old['metadata']['name']} from 2 to 0"
    up = f"Scaled up replica set {new['metadata']['name']} from 0 to 2"
    assert down in messages and up in messages


def test_a_rollout_that_never_becomes_ready_exceeds_its_deadline(cluster):
    probe = {"exec": {"command": ["true"]}, "initialDelaySeconds": 3600}
    body = json.loads(deployment("stuck", 1, progressDeadlineSeconds=3))
    body["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = probe
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=True)
    res = rollout_status(cluster, "stuck")
    assert res.returncode == 1
    assert 'error: deployment "stuck" exceeded its progress deadline' in res.stderr
    conds = {c["type"]: c for c in kubectl_json(cluster, "get", "deploy", "stuck")["status"]["conditions"]}
    assert conds["Progressing"]["status"] == "False" and conds["Progressing"]["reason"] == "ProgressDeadlineExceeded"
    assert conds["Progressing"]["message"].endswith("has timed out progressing.")
    assert conds["Available"]["status"] == "False"


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_deleting_a_deployment_cascades_as_asked(cluster, cascade):
    name = f"bye-{cascade}"
    cluster.kubectl("apply", "-f", "-", input=deployment(name, 2), check=True)
    assert rollout_status(cluster, name).returncode == 0
    (rs,) = replica_sets(cluster, name)
    pods = {p["metadata"]["uid"] for p in kubectl_json(cluster, "get", "pods", "-l", f"app={name}")["items"]}
    assert len(pods) == 2
    # kubectl waits for the Deployment itself to go (for foreground: after its ReplicaSet and pods).
    cluster.kubectl("delete", "deploy", name, f"--cascade={cascade}", "--timeout=60s", check=True, timeout=90)
    if cascade == "orphan":
        # The ReplicaSet and its pods stay; the ReplicaSet no longer names an owner, and it keeps its pods.
        def orphaned() -> bool:
            left = replica_sets(cluster, name)
            return len(left) == 1 and not left[0]["metadata"].get("ownerReferences")

        wait_for("the ReplicaSet released", orphaned)
        assert replica_sets(cluster, name)[0]["metadata"]["uid"] == rs["metadata"]["uid"]
        kept = kubectl_json(cluster, "get", "pods", "-l", f"app={name}")["items"]
        assert {p["metadata"]["uid"] for p in kept} == pods
        assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in kept)
        cluster.kubectl("delete", "rs", rs["metadata"]["name"], check=True)
    else:
        if cascade == "foreground":
            # Foreground: the Deployment was only removed once nothing it owned was left.
            assert not replica_sets(cluster, name)
        wait_for("replica sets gone", lambda: not replica_sets(cluster, name))
    wait_for("pods gone", lambda: not kubectl_json(cluster, "get", "pods", "-l", f"app={name}")["items"])
