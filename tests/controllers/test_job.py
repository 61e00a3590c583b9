"""Jobs as a user drives them with kubectl on a cluster whose pods run (simulated nodes, real scheduler and
controller manager): an echo Job completes and `kubectl logs job/...` prints its output; a failing one stops at
backoffLimit; Indexed Jobs, activeDeadlineSeconds, suspend/resume, and a podFailurePolicy FailJob rule; finished
pods are counted once and lose their tracking finalizer. Indexed Jobs with backoffLimitPerIndex (an index that
keeps failing fails alone, after its own back-off; maxFailedIndexes; the FailIndex action) and a successPolicy
that completes a Job early; the API server refusing these settings where they do not belong."""

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


# -- per-index back-off, FailIndex and successPolicy (JobBackoffLimitPerIndex, JobSuccessPolicy: beta, on) --------

SIMULATE = "pyk8s.io/simulate"
INDEX = "batch.kubernetes.io/job-completion-index"
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"


def indexed_job(name: str, completions: int, **spec: Any) -> str:
    """An Indexed Job whose pods run until told how to end (`play`)."""
    return job(name, ["sleep", "3600"], completions=completions, parallelism=completions, completionMode="Indexed",
               **spec)  # fmt: skip


def play(cluster: APIServerProcess, name: str, exits: dict[int, int | None], default: int | None = 0) -> None:
    """Play the workload of Job `name`: each of its pods not yet told ends at once with the exit code of its
    index (`exits`, else `default`; None runs on). The simulated container reads the `pyk8s.io/simulate`
    annotation, so an index decides its pod's fate as a real workload reading JOB_COMPLETION_INDEX would."""
    by_code: dict[int, list[str]] = {}
    for pod in pods_of(cluster, name):
        md = pod["metadata"]
        if SIMULATE in (md.get("annotations") or {}) or md.get("deletionTimestamp"):
            continue
        code = exits.get(int(md["annotations"][INDEX]), default)
        if code is not None:
            by_code.setdefault(code, []).append(md["name"])
    for code, names in by_code.items():
        cluster.kubectl("annotate", "pod", *names, f'{SIMULATE}={{"runSeconds": 0, "exitCode": {code}}}')


def running(cluster: APIServerProcess, name: str, n: int) -> None:
    """Wait until the Job's status shows its `n` pods ready: the controller's writes have settled, so what
    follows is what the test did (a pod ending while the controller's own last write is still on its way back
    to it makes its next write conflict, and the retry sees the pods it stopped as failed)."""
    wait_for(f"{n} pods of {name} ready",
             lambda: (kubectl_json(cluster, "get", "job", name).get("status") or {}).get("ready") == n)  # fmt: skip


def finished_with(cluster: APIServerProcess, name: str, exits: dict[int, int | None], default: int | None = 0,
                  timeout: float = 30) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Play the Job until it has its terminal condition; answers its conditions."""

    def done() -> dict[str, dict[str, Any]] | None:
        play(cluster, name, exits, default)
        conds = conditions(cluster, name)
        return conds if "Complete" in conds or "Failed" in conds else None

    found: dict[str, dict[str, Any]] = wait_for(f"job {name} finished", done, timeout=timeout)
    return found


def index_of(pod: dict[str, Any]) -> int:
    return int(pod["metadata"]["annotations"][INDEX])


def test_an_index_that_keeps_failing_fails_alone_after_its_own_backoff(cluster):
    cluster.kubectl("apply", "-f", "-", input=indexed_job("perindex", 3, backoffLimitPerIndex=1), check=True)
    spec = kubectl_json(cluster, "get", "job", "perindex")["spec"]
    # The Job-wide limit is off when each index has one; pods are still replaced once they are terminating.
    assert spec["backoffLimit"] == 2147483647 and spec["podReplacementPolicy"] == "TerminatingOrFailed"
    conds = finished_with(cluster, "perindex", {1: 1})
    assert (conds["FailureTarget"]["reason"], conds["Failed"]["reason"]) == ("FailedIndexes",) * 2
    assert conds["Failed"]["message"] == "Job has failed indexes"
    st = kubectl_json(cluster, "get", "job", "perindex")["status"]
    assert (st["failedIndexes"], st["completedIndexes"], st["succeeded"], st["failed"]) == ("1", "0,2", 2, 2)
    pods = pods_of(cluster, "perindex")
    failing = sorted((p for p in pods if index_of(p) == 1), key=lambda p: p["metadata"]["creationTimestamp"])
    # Index 1 ran twice (its limit is one retry), the retry carrying the index's failure count; 0 and 2 once.
    assert [p["metadata"]["annotations"][FAILURE_COUNT] for p in failing] == ["0", "1"]
    assert sorted(index_of(p) for p in pods if index_of(p) != 1) == [0, 2]
    # The retry waited out the index's back-off (10 s) after the first failure.
    first_end = failing[0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    assert failing[1]["metadata"]["creationTimestamp"] >= first_end
    assert all("batch.kubernetes.io/job-tracking" not in (p["metadata"].get("finalizers") or []) for p in pods)
    events = kubectl_json(cluster, "get", "events", "--field-selector", "involvedObject.name=perindex")["items"]
    reasons = [e["reason"] for e in events if e["type"] == "Warning"]
    assert "FailedIndexes" in reasons


def test_too_many_failed_indexes_fail_the_job_at_once(cluster):
    body = indexed_job("maxfail", 4, backoffLimitPerIndex=0, maxFailedIndexes=1)
    cluster.kubectl("apply", "-f", "-", input=body, check=True)
    running(cluster, "maxfail", 4)
    conds = finished_with(cluster, "maxfail", {1: 1, 2: 1}, default=None)
    assert conds["Failed"]["reason"] == "MaxFailedIndexesExceeded"
    assert conds["Failed"]["message"] == "Job has exceeded the specified maximal number of failed indexes"
    st = kubectl_json(cluster, "get", "job", "maxfail")["status"]
    # The two pods still running when the Job failed were stopped and count as failed too.
    assert (st["failedIndexes"], st["failed"], st.get("completedIndexes", "")) == ("1,2", 4, "")
    wait_for("the running pods stopped", lambda: all(
        p["status"]["phase"] in ("Failed", "Succeeded") or p["metadata"].get("deletionTimestamp")
        for p in pods_of(cluster, "maxfail")))  # fmt: skip


def test_a_fail_index_rule_fails_the_index_without_retries(cluster):
    rule = {"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}
    body = indexed_job("failindex", 3, backoffLimitPerIndex=6, podFailurePolicy={"rules": [rule]})
    cluster.kubectl("apply", "-f", "-", input=body, check=True)
    conds = finished_with(cluster, "failindex", {0: 42})
    assert conds["Failed"]["reason"] == "FailedIndexes"
    st = kubectl_json(cluster, "get", "job", "failindex")["status"]
    assert (st["failedIndexes"], st["completedIndexes"], st["failed"], st["succeeded"]) == ("0", "1,2", 1, 2)
    assert sorted(index_of(p) for p in pods_of(cluster, "failindex")) == [0, 1, 2]  # index 0 was not retried


def test_a_success_policy_completes_the_job_early(cluster):
    policy = {"rules": [{"succeededIndexes": "0"}]}
    cluster.kubectl("apply", "-f", "-", input=indexed_job("early", 3, successPolicy=policy), check=True)
    running(cluster, "early", 3)
    conds = finished_with(cluster, "early", {0: 0}, default=None)
    met, complete = conds["SuccessCriteriaMet"], conds["Complete"]
    assert (met["reason"], met["message"]) == (complete["reason"], complete["message"]) == (
        "SuccessPolicy", "Matched rules at index 0")  # fmt: skip
    types = [c["type"] for c in kubectl_json(cluster, "get", "job", "early")["status"]["conditions"]]
    assert types.index("SuccessCriteriaMet") < types.index("Complete")
    st = kubectl_json(cluster, "get", "job", "early")["status"]
    # The indexes still running were stopped, not counted as failures.
    assert (st["completedIndexes"], st["succeeded"], st.get("failed", 0), st.get("active", 0)) == ("0", 1, 0, 0)
    wait_for("the other indexes' pods stopped", lambda: all(
        p["status"]["phase"] in ("Failed", "Succeeded") or p["metadata"].get("deletionTimestamp")
        for p in pods_of(cluster, "early") if index_of(p) != 0))  # fmt: skip


def test_the_api_server_refuses_misplaced_per_index_and_success_settings(cluster):
    rule = {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}
    cases = {
        "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set":
            indexed_job("bad1", 2, podFailurePolicy={"rules": [rule]}),
        "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode":
            job("bad2", ["true"], backoffLimitPerIndex=1),
        "spec.successPolicy: Invalid value:": job("bad3", ["true"], successPolicy={"rules": [{"succeededCount": 1}]}),
        "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified":
            indexed_job("bad4", 2, maxFailedIndexes=1),
        "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"0-2\": error parsing succeededIndexes: "
        "too large index: \"2\"": indexed_job("bad5", 2, successPolicy={"rules": [{"succeededIndexes": "0-2"}]}),
    }  # fmt: skip
    for message, body in cases.items():
        res = cluster.kubectl("apply", "-f", "-", input=body)
        assert res.returncode != 0 and message in res.stderr, res.stderr
