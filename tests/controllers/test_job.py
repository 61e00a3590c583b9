"""Jobs as a user drives them with kubectl on a cluster whose pods run (simulated nodes, real scheduler and
controller manager): an echo Job completes and `kubectl logs job/...` prints its output; a failing one stops at
backoffLimit; Indexed Jobs, activeDeadlineSeconds, suspend/resume, and a podFailurePolicy FailJob rule; finished
pods are counted once and lose their tracking finalizer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for


@pytest.fixture
def cluster(full_cluster: APIServerProcess) -> APIServerProcess:
    return full_cluster


def kubectl_json(cluster: APIServerProcess, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json", check=True).stdout)


def job(name: str, command: list[str], restart: str = "Never", **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": restart,
                                       "containers": [{"name": "c", "image": "busybox", "command": command}]}},
                 **spec},
    })  # fmt: skip


def conditions(cluster: APIServerProcess, name: str) -> dict[str, dict[str, Any]]:
    st = kubectl_json(cluster, "get", "job", name).get("status") or {}
    return {c["type"]: c for c in st.get("conditions") or []}


def pods_of(cluster: APIServerProcess, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl_json(cluster, "get", "pods", "-l", f"batch.kubernetes.io/job-name={name}")[
        "items"
    ]
    return items


def test_an_echo_job_completes_and_logs(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("hello", ["echo", "hi"]), check=True)
    res = cluster.kubectl("wait", "--for=condition=complete", "job/hello", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    assert cluster.kubectl("logs", "job/hello", check=True).stdout == "hi\n"
    st = kubectl_json(cluster, "get", "job", "hello")["status"]
    assert st["succeeded"] == 1 and "active" not in st and st["ready"] == 0 and st["terminating"] == 0
    assert st["startTime"] <= st["completionTime"]
    assert "uncountedTerminatedPods" not in st or st["uncountedTerminatedPods"] == {}
    conds = conditions(cluster, "hello")
    assert (conds["SuccessCriteriaMet"]["reason"], conds["Complete"]["reason"]) == ("CompletionsReached",) * 2
    assert conds["Complete"]["message"] == "Reached expected number of succeeded pods"
    [pod] = pods_of(cluster, "hello")
    assert pod["status"]["phase"] == "Succeeded"
    assert "batch.kubernetes.io/job-tracking" not in (pod["metadata"].get("finalizers") or [])
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    reasons = [e["reason"] for e in kubectl_json(cluster, "get", "events", "--field-selector",
                                                  "involvedObject.name=hello")["items"]]  # fmt: skip
    assert "SuccessfulCreate" in reasons and "Completed" in reasons
    out = cluster.kubectl("get", "job", "hello", "--no-headers", check=True).stdout.split()
    assert out[:3] == ["hello", "Complete", "1/1"]


def test_a_failing_job_stops_at_its_backoff_limit(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("doomed", ["false"], backoffLimit=1), check=True)
    res = cluster.kubectl("wait", "--for=condition=failed", "job/doomed", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    st = kubectl_json(cluster, "get", "job", "doomed")["status"]
    assert st["failed"] == 2 and not st.get("succeeded")  # the first failure and one retry, after a back-off
    conds = conditions(cluster, "doomed")
    assert conds["FailureTarget"]["reason"] == conds["Failed"]["reason"] == "BackoffLimitExceeded"
    assert conds["Failed"]["message"] == "Job has reached the specified backoff limit"
    pods = pods_of(cluster, "doomed")
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Failed"}
    # The retry waited out the back-off (10 s) after the first failure.
    finished = sorted(p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] for p in pods)
    created = sorted(p["metadata"]["creationTimestamp"] for p in pods)
    assert created[1] >= finished[0]
    warnings = [e for e in kubectl_json(cluster, "get", "events", "--field-selector",
                                        "involvedObject.name=doomed")["items"] if e["type"] == "Warning"]  # fmt: skip
    assert any(e["reason"] == "BackoffLimitExceeded" for e in warnings)


def test_an_indexed_job_runs_each_index_once(cluster):
    body = job("idx", ["sh", "-c", "echo $JOB_COMPLETION_INDEX"], completions=3, parallelism=3,
               completionMode="Indexed")  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=body, check=True)
    res = cluster.kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    st = kubectl_json(cluster, "get", "job", "idx")["status"]
    assert st["completedIndexes"] == "0-2" and st["succeeded"] == 3
    pods = pods_of(cluster, "idx")
    by_index = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods}
    assert sorted(by_index) == ["0", "1", "2"]
    for i, pod in by_index.items():
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == i
        assert pod["metadata"]["name"].startswith(f"idx-{i}-") and pod["spec"]["hostname"] == f"idx-{i}"
        env = pod["spec"]["containers"][0]["env"]
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}} in env  # fmt: skip


def test_active_deadline_stops_a_job(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("late", ["sleep", "3600"], activeDeadlineSeconds=2), check=True)
    res = cluster.kubectl("wait", "--for=condition=failed", "job/late", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    conds = conditions(cluster, "late")
    assert conds["Failed"]["reason"] == "DeadlineExceeded"
    assert conds["Failed"]["message"] == "Job was active longer than specified deadline"
    wait_for("the running pod stopped", lambda: all(
        p["status"]["phase"] in ("Failed", "Succeeded") or p["metadata"].get("deletionTimestamp")
        for p in pods_of(cluster, "late")))  # fmt: skip


def test_suspend_and_resume(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("later", ["echo", "resumed"], suspend=True), check=True)
    wait_for("Suspended", lambda: conditions(cluster, "later").get("Suspended", {}).get("status") == "True")
    assert conditions(cluster, "later")["Suspended"]["reason"] == "JobSuspended"
    assert pods_of(cluster, "later") == []
    cluster.kubectl("patch", "job", "later", "--type=merge", "-p", '{"spec":{"suspend":false}}', check=True)
    res = cluster.kubectl("wait", "--for=condition=complete", "job/later", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    resumed = conditions(cluster, "later")["Suspended"]
    assert (resumed["status"], resumed["reason"], resumed["message"]) == ("False", "JobResumed", "Job resumed")


def test_a_pod_failure_policy_fails_the_job_at_once(cluster):
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]}
    body = job("fatal", ["sh", "-c", "exit 42"], backoffLimit=6, podFailurePolicy=policy)
    cluster.kubectl("apply", "-f", "-", input=body, check=True)
    res = cluster.kubectl("wait", "--for=condition=failed", "job/fatal", "--timeout=60s", timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    failed = conditions(cluster, "fatal")["Failed"]
    [pod] = pods_of(cluster, "fatal")
    assert failed["reason"] == "PodFailurePolicy"
    assert failed["message"] == (f"Container c for pod default/{pod['metadata']['name']} failed with exit code 42 "
                                 "matching FailJob rule at index 0")  # fmt: skip


def test_a_finished_job_with_a_ttl_is_deleted_with_its_pods(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("brief", ["true"], ttlSecondsAfterFinished=1), check=True)
    wait_for("the job deleted after its TTL",
             lambda: cluster.kubectl("get", "job", "brief").returncode != 0 and not pods_of(cluster, "brief"))  # fmt: skip


def test_deleting_a_running_job_takes_its_pods_with_it(cluster):
    cluster.kubectl("apply", "-f", "-", input=job("gone", ["sleep", "3600"]), check=True)
    wait_for("the pod running", lambda: [p["status"]["phase"] for p in pods_of(cluster, "gone")] == ["Running"])
    cluster.kubectl("delete", "job", "gone", "--wait=false", check=True)
    # The pod carries the job-tracking finalizer: once its Job is gone the controller must drop it, or the pod
    # would stay Terminating for ever.
    wait_for("the pod deleted", lambda: pods_of(cluster, "gone") == [])
