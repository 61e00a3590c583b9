"""The simulated pod's life, as pure functions of the pod and the time: init containers in order, sidecars,
exits and restart policies, CrashLoopBackOff back-off, readiness delays, the active deadline, ephemeral
containers; phases and conditions as upstream's getPhase and status/generate.go work them out."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.api.gotime import parse
from pyk8s.kubelet.container_model import ANNOTATION
from pyk8s.kubelet.pod_lifecycle import (
    DEADLINE_MESSAGE,
    KILLED_EXIT_CODE,
    REPLAY_HORIZON,
    PodSync,
    needs_pod_ip,
    sync_pod,
)

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HOST = "127.0.0.1"
SCHEDULED = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2025-12-31T23:59:59Z"}  # fmt: skip


def make_pod(
    *containers: dict[str, Any],
    policy: str = "Always",
    inits: list[dict[str, Any]] | None = None,
    simulate: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1"}
    if simulate is not None:
        md["annotations"] = {ANNOTATION: json.dumps(simulate)}
    s: dict[str, Any] = {"nodeName": "n1", "restartPolicy": policy, "containers": list(containers), **spec}
    if inits:
        s["initContainers"] = inits
    return {"metadata": md, "spec": s, "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [SCHEDULED]}}  # fmt: skip


def c(name: str = "app", *command: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox", **extra}
    if command:
        out["command"] = list(command)
    return out


class Kubelet:
    """Drives a pod as the pod workers do: each sync's status is written, and the next comes at its time."""

    def __init__(self, pod: dict[str, Any], start: float = T0) -> None:
        self.pod = pod
        self.now = start
        self.history: list[tuple[float, PodSync]] = []

    def sync(self, now: float | None = None) -> PodSync:
        self.now = self.now if now is None else now
        ip = "10.244.0.2" if needs_pod_ip(self.pod) else None
        result = sync_pod(self.pod, self.now, HOST, ip)
        self.pod["status"] = result.status
        self.history.append((self.now, result))
        return result

    def run_until(self, horizon: float, max_syncs: int = 500) -> PodSync:
        result = self.sync()
        for _ in range(max_syncs):
            if result.next_at is None or result.next_at > horizon:
                break
            result = self.sync(max(result.next_at, self.now))
        return result

    def status(self, name: str = "app", key: str = "containerStatuses") -> dict[str, Any]:
        return next(s for s in self.pod["status"][key] if s["name"] == name)

    def condition(self, type_: str) -> dict[str, Any]:
        return next(c for c in self.pod["status"]["conditions"] if c["type"] == type_)

    def actions(self) -> list[tuple[float, str, str]]:
        return [(t - T0, a.kind, a.name) for t, r in self.history for a in r.actions]


def ts(seconds: float) -> str:
    from pyk8s.kubelet.pod_lifecycle import rfc3339

    return rfc3339(T0 + seconds)


def secs(text: str) -> float:
    return parse(text)[0] - T0


def test_a_container_that_runs_until_deleted_takes_two_writes_then_nothing() -> None:
    k = Kubelet(make_pod(c("app", "nginx")))
    first = k.sync()
    assert first.status["phase"] == "Pending" and first.next_at == T0
    second = k.sync()
    assert second.next_at is None
    status = second.status
    assert status["phase"] == "Running" and status["podIP"] == "10.244.0.2" and status["startTime"] == ts(0)
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "True"),
        ("ContainersReady", "True"), ("PodScheduled", "True"),
    ]  # fmt: skip
    app = k.status()
    assert app["state"] == {"running": {"startedAt": ts(0)}} and app["ready"] and app["started"]
    assert app["image"] == "docker.io/library/busybox:latest" and app["containerID"].startswith("containerd://")
    assert [a.kind for a in second.actions] == ["start"]
    # Seen again later: the same status, nothing to do.
    again = k.sync(T0 + 3600)
    assert again.status == status and again.next_at is None and not again.actions


def test_a_host_network_pod_has_the_node_address() -> None:
    k = Kubelet(make_pod(c("app", "nginx"), hostNetwork=True))
    k.sync()
    assert not needs_pod_ip(k.pod)
    assert k.sync().status["podIPs"] == [{"ip": HOST}]


@pytest.mark.parametrize(
    ("command", "policy", "phase", "code", "reason"),
    [
        (["echo", "hi"], "Never", "Succeeded", 0, "Completed"),
        (["sh", "-c", "exit 3"], "Never", "Failed", 3, "Error"),
        (["true"], "OnFailure", "Succeeded", 0, "Completed"),
    ],
)
def test_containers_that_end_for_good(command: list[str], policy: str, phase: str, code: int, reason: str) -> None:
    k = Kubelet(make_pod(c("app", *command), policy=policy))
    result = k.run_until(T0 + 60)
    assert result.status["phase"] == phase and result.next_at is None
    term = k.status()["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (code, reason)
    assert term["containerID"] == k.status()["containerID"] and term["startedAt"] == term["finishedAt"] == ts(0)
    assert k.status()["restartCount"] == 0 and not k.status()["ready"] and not k.status()["started"]
    completed = "PodCompleted" if phase == "Succeeded" else "PodFailed"
    assert (k.condition("Ready")["status"], k.condition("Ready").get("reason")) == ("False", completed)
    assert k.condition("ContainersReady").get("reason") == completed
    assert k.condition("PodReadyToStartContainers")["status"] == "False"  # the sandbox is gone
    if phase == "Succeeded":
        assert k.condition("Initialized").get("reason") == "PodCompleted"
    # Terminal phases are sticky.
    assert k.sync(T0 + 10_000).status == result.status


def test_crash_loop_back_off_doubles_from_10s_to_300s() -> None:
    k = Kubelet(make_pod(c("app", "sh", "-c", "exit 1"), policy="OnFailure"))
    k.run_until(T0 + 1300)
    starts = [t for t, kind, _ in k.actions() if kind == "start"]
    assert starts == [0, 0, 10, 30, 70, 150, 310, 610, 910, 1210]
    backoffs = [t for t, kind, _ in k.actions() if kind == "backoff"]
    assert backoffs == starts[1:]
    app = k.status()
    assert app["restartCount"] == 9 and k.pod["status"]["phase"] == "Running"
    waiting = app["state"]["waiting"]
    assert waiting == {
        "reason": "CrashLoopBackOff",
        "message": "back-off 5m0s restarting failed container=app pod=p_default(u1)",
    }
    last = app["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"], last["startedAt"], last["finishedAt"]) == (1, "Error", ts(1210), ts(1210))
    assert app["containerID"] == last["containerID"] and not app["ready"] and not app["started"]
    assert (k.condition("Ready")["reason"], k.condition("Ready")["message"]) == (
        "ContainersNotReady", "containers with unready status: [app]",
    )  # fmt: skip


def test_back_off_messages_use_go_durations() -> None:
    k = Kubelet(make_pod(c("app", "false")))
    messages = []
    result = k.sync()
    while result.next_at is not None and result.next_at < T0 + 400:
        result = k.sync(max(result.next_at, k.now))
        waiting = k.status()["state"].get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            messages.append(waiting["message"].split(" restarting")[0])
    assert messages[:6] == ["back-off 10s", "back-off 20s", "back-off 40s", "back-off 1m20s", "back-off 2m40s", "back-off 5m0s"]  # fmt: skip


def test_always_restarts_after_exit_0_and_a_long_run_resets_the_back_off() -> None:
    k = Kubelet(make_pod(c("app", "true")))
    k.run_until(T0 + 15)
    assert k.status()["lastState"]["terminated"]["reason"] == "Completed" and k.status()["restartCount"] == 2
    # A container that ran more than 600 s before it exited restarts at once, every time.
    k = Kubelet(make_pod(c("app"), simulate={"runSeconds": 700, "exitCode": 1}))
    k.run_until(T0 + 2200)
    assert [t for t, kind, _ in k.actions() if kind == "start"] == [0, 700, 1400, 2100]
    assert not [a for a in k.actions() if a[1] == "backoff"]


def test_a_late_sync_replays_what_happened_at_its_times() -> None:
    on_time = Kubelet(make_pod(c("app", "sh", "-c", "sleep 3; exit 2"), policy="OnFailure"))
    on_time.run_until(T0 + 200)
    late = Kubelet(make_pod(c("app", "sh", "-c", "sleep 3; exit 2"), policy="OnFailure"))
    late.sync()
    late.sync()
    late.sync(T0 + 200)  # as a restarted process would find it
    assert late.pod["status"]["containerStatuses"] == on_time.pod["status"]["containerStatuses"]
    assert late.pod["status"]["phase"] == on_time.pod["status"]["phase"] == "Running"
    # And a status read back from the API continues the same way (the status is the state).
    resumed = Kubelet(copy.deepcopy(on_time.pod), start=T0 + 200)
    assert (
        resumed.run_until(T0 + 1000).status["containerStatuses"]
        == on_time.run_until(T0 + 1000).status["containerStatuses"]
    )


def test_init_containers_run_in_order_then_sidecars_then_app() -> None:
    inits = [
        c("setup", "sleep", "2"),
        c("unknown", "/bin/migrate", "--all"),  # the model cannot tell: it completes at once
        c("proxy", "envoy", restartPolicy="Always", startupProbe={"initialDelaySeconds": 3}),
        c("after", "true"),
    ]
    k = Kubelet(make_pod(c("app", "nginx"), inits=inits))
    k.sync()
    assert k.status("app")["state"] == {"waiting": {"reason": "PodInitializing"}}
    k.sync()
    assert k.pod["status"]["phase"] == "Pending"
    assert k.condition("Initialized")["message"] == "containers with incomplete status: [setup unknown proxy after]"
    k.run_until(T0 + 60)
    starts = [(t, name) for t, kind, name in k.actions() if kind == "start"]
    assert starts == [(0, "setup"), (2, "unknown"), (2, "proxy"), (5, "after"), (5, "app")]
    setup, unknown, proxy, _after = k.pod["status"]["initContainerStatuses"]
    assert setup["state"]["terminated"]["finishedAt"] == ts(2) and setup["ready"] and not setup["started"]
    assert unknown["state"]["terminated"]["exitCode"] == 0
    assert "running" in proxy["state"] and proxy["started"] and proxy["ready"]
    assert k.pod["status"]["phase"] == "Running" and k.condition("Initialized")["status"] == "True"
    assert k.condition("Ready")["status"] == "True"


def test_a_failed_init_container_fails_a_never_pod_and_crash_loops_otherwise() -> None:
    k = Kubelet(make_pod(c("app"), inits=[c("init", "false")], policy="Never"))
    result = k.run_until(T0 + 60)
    assert result.status["phase"] == "Failed" and "waiting" in k.status()["state"]
    k = Kubelet(make_pod(c("app"), inits=[c("init", "false")], policy="Always"))
    k.run_until(T0 + 25)
    init = k.status("init", "initContainerStatuses")
    assert init["restartCount"] == 2 and init["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert k.pod["status"]["phase"] == "Pending" and k.status()["state"]["waiting"]["reason"] == "PodInitializing"


def test_readiness_waits_for_the_probe_delay_and_the_model() -> None:
    probe = {"readinessProbe": {"initialDelaySeconds": 5}}
    k = Kubelet(make_pod(c("app", "nginx", **probe), simulate={"readySeconds": 2}))
    k.sync()
    result = k.sync()
    assert result.next_at == T0 + 7 and not k.status()["ready"] and k.status()["started"]
    assert k.condition("Ready")["message"] == "containers with unready status: [app]"
    result = k.sync(T0 + 7)
    assert k.status()["ready"] and k.condition("Ready")["status"] == "True" and result.next_at is None
    assert k.condition("Ready")["lastTransitionTime"] == ts(7)


def test_a_startup_probe_delays_started_and_ready() -> None:
    k = Kubelet(make_pod(c("app", "nginx", startupProbe={"initialDelaySeconds": 4})))
    k.sync()
    k.sync()
    assert not k.status()["started"] and not k.status()["ready"]
    k.sync(T0 + 4)
    assert k.status()["started"] and k.status()["ready"]


def test_readiness_gates() -> None:
    pod = make_pod(c("app", "nginx"), readinessGates=[{"conditionType": "example.com/lb"}])
    k = Kubelet(pod)
    k.run_until(T0 + 1)
    assert k.condition("ContainersReady")["status"] == "True"
    assert (k.condition("Ready")["reason"], k.condition("Ready")["message"]) == (
        "ReadinessGatesNotReady", 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    )  # fmt: skip
    k.pod["status"]["conditions"].insert(0, {"type": "example.com/lb", "status": "True"})
    k.sync(T0 + 2)
    assert k.condition("Ready")["status"] == "True"
    assert k.pod["status"]["conditions"][0]["type"] == "example.com/lb"  # others' conditions stay first


def test_active_deadline_fails_the_pod_and_kills_its_containers() -> None:
    k = Kubelet(make_pod(c("app", "nginx"), c("side", "sh", "-c", "exit 1"), activeDeadlineSeconds=2))
    result = k.run_until(T0 + 60)
    status = result.status
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", DEADLINE_MESSAGE)
    app = k.status()["state"]["terminated"]
    assert (app["exitCode"], app["finishedAt"]) == (KILLED_EXIT_CODE, ts(2))
    assert "terminated" in k.status("side")["state"]
    assert [(t, kind, name) for t, kind, name in k.actions() if kind in ("deadline", "kill")] == [
        (2, "deadline", ""), (2, "kill", "app"),
    ]  # fmt: skip
    assert result.next_at is None and k.condition("Ready")["reason"] == "PodFailed"


def test_a_job_pod_with_a_sidecar_completes_and_stops_the_sidecar() -> None:
    k = Kubelet(make_pod(c("app", "sleep", "3"), inits=[c("proxy", "envoy", restartPolicy="Always")], policy="Never"))
    result = k.run_until(T0 + 60)
    assert result.status["phase"] == "Succeeded"
    proxy = k.status("proxy", "initContainerStatuses")["state"]["terminated"]
    assert proxy["finishedAt"] == ts(3)
    assert ("kill", "proxy") in [(kind, name) for _, kind, name in k.actions()]


def test_ephemeral_containers_start_when_added_and_never_restart() -> None:
    k = Kubelet(make_pod(c("app", "nginx")))
    k.run_until(T0 + 1)
    k.pod["spec"]["ephemeralContainers"] = [
        {"name": "debugger", "image": "busybox", "command": ["sh", "-c", "sleep 5; exit 1"]}
    ]
    result = k.sync(T0 + 100)
    (dbg,) = result.status["ephemeralContainerStatuses"]
    assert dbg["state"] == {"running": {"startedAt": ts(100)}} and dbg["ready"] is False and "started" not in dbg
    assert result.next_at == T0 + 105 and [a.field_path for a in result.actions] == [
        "spec.ephemeralContainers{debugger}"
    ]
    result = k.run_until(T0 + 1000)
    (dbg,) = result.status["ephemeralContainerStatuses"]
    assert dbg["state"]["terminated"]["exitCode"] == 1 and dbg["restartCount"] == 0
    assert result.status["phase"] == "Running" and result.next_at is None


# -- properties ------------------------------------------------------------------------------------------------

BACKOFF_WAITS = {0, 10, 20, 40, 80, 160, 300}

containers = st.fixed_dictionaries(
    {
        "runSeconds": st.sampled_from([None, 0, 1, 3, 7.5, 650]),
        "exitCode": st.sampled_from([0, 1, 2]),
        "readySeconds": st.sampled_from([0, 2]),
    }
)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    names = ["a", "b"][: draw(st.integers(1, 2))]
    per = {n: draw(containers) for n in names}
    inits = []
    if draw(st.booleans()):
        inits.append(c("init"))
        per["init"] = draw(containers)
    if draw(st.booleans()):
        inits.append(c("side", restartPolicy="Always"))
        per["side"] = draw(containers)
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["activeDeadlineSeconds"] = draw(st.integers(1, 900))
    return make_pod(
        *(c(n) for n in names), policy=draw(st.sampled_from(["Always", "OnFailure", "Never"])), inits=inits,
        simulate={"containers": per}, **spec,
    )  # fmt: skip


def all_statuses(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [*status.get("initContainerStatuses", ()), *status.get("containerStatuses", ())]


@settings(max_examples=60, deadline=None)
@given(pods(), st.integers(60, 2500))
def test_properties_of_a_pod_driven_on_time(pod: dict[str, Any], horizon: int) -> None:
    k = Kubelet(copy.deepcopy(pod))
    k.run_until(T0 + horizon, max_syncs=2000)
    phases = [r.status["phase"] for _, r in k.history]
    restarts: dict[str, int] = {}
    for (t, r), (_, r2) in zip(k.history, k.history[1:], strict=False):
        # Phases move forward only: Pending, Running, then a terminal phase that never changes.
        order = {"Pending": 0, "Running": 1, "Succeeded": 2, "Failed": 2}
        assert order[r2.status["phase"]] >= order[r.status["phase"]]
        if r.status["phase"] in ("Succeeded", "Failed"):
            assert r2.status == r.status and r.next_at is None
        if r.next_at is not None:
            assert r.next_at >= t
    for _, r in k.history:
        for s in all_statuses(r.status):
            assert s["restartCount"] >= restarts.get(s["name"], 0)
            restarts[s["name"]] = s["restartCount"]
            last = (s.get("lastState") or {}).get("terminated")
            if last and "running" in s["state"]:
                gap = secs(s["state"]["running"]["startedAt"]) - secs(last["finishedAt"])
                assert gap in BACKOFF_WAITS
            waiting = s["state"].get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                wait = waiting["message"].split()[1]
                assert last is not None and wait in ("10s", "20s", "40s", "1m20s", "2m40s", "5m0s")
            assert s["ready"] is False or "running" in s["state"] or s["name"] == "init"
    policy = pod["spec"]["restartPolicy"]
    if phases[-1] == "Succeeded":
        assert policy != "Always" and all(
            s["state"]["terminated"]["exitCode"] == 0 for s in k.pod["status"]["containerStatuses"]
        )
    if phases[-1] == "Failed" and "activeDeadlineSeconds" not in pod["spec"]:
        assert policy != "Always"
    # Deterministic: the same pod at the same time gives the same status.
    assert sync_pod(copy.deepcopy(k.pod), k.now, HOST) == sync_pod(copy.deepcopy(k.pod), k.now, HOST)


@settings(max_examples=40, deadline=None)
@given(pods(), st.integers(5, 2000))
def test_a_late_sync_agrees_with_syncs_on_time(pod: dict[str, Any], horizon: int) -> None:
    on_time = Kubelet(copy.deepcopy(pod))
    on_time.run_until(T0 + horizon, max_syncs=2000)
    on_time.sync(T0 + horizon)
    late = Kubelet(copy.deepcopy(pod))
    late.sync()
    late.sync()
    late.sync(T0 + horizon)
    assert late.pod["status"]["phase"] == on_time.pod["status"]["phase"]
    assert all_statuses(late.pod["status"]) == all_statuses(on_time.pod["status"])


@pytest.mark.parametrize("started", ["2020-01-01T00:00:00Z", "0001-01-01T00:00:00Z"])
def test_a_status_from_long_ago_replays_only_the_last_hour(started: str) -> None:
    # A crash-looping container whose status (ours from long ago, or another client's) says it started years
    # back: the sync catches up at once, with an hour's restarts, rather than a few million a second at a time.
    pod = make_pod(c("app"), simulate={"runSeconds": 0, "exitCode": 1})
    last = {"exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": started, "containerID": "x://1"}
    pod["status"] = {
        "phase": "Running", "startTime": started, "podIP": "10.244.0.2",
        "containerStatuses": [{
            "name": "app", "image": "busybox", "imageID": "", "ready": True, "restartCount": 3,
            "state": {"running": {"startedAt": started}}, "lastState": {"terminated": last},
        }],
    }  # fmt: skip
    k = Kubelet(pod)
    first = k.sync()
    assert len([a for a in first.actions if a.kind == "start"]) < 40
    assert first.next_at is not None and first.next_at > T0 + 5
    assert k.sync().actions == []  # caught up
    status = k.status()
    assert 3 < status["restartCount"] < 40
    assert secs(status["lastState"]["terminated"]["finishedAt"]) >= -REPLAY_HORIZON


def test_a_pod_being_deleted_is_stopped_and_ends_terminal() -> None:
    k = Kubelet(make_pod(c("app", "nginx"), c("done", "true"), policy="OnFailure"))
    k.run_until(T0 + 5)
    assert k.pod["status"]["phase"] == "Running"
    final = sync_pod(k.pod, T0 + 10, HOST, stopping=True)
    assert [(a.kind, a.name) for a in final.actions] == [("kill", "app")]
    app, done = final.status["containerStatuses"]
    assert app["state"]["terminated"]["exitCode"] == KILLED_EXIT_CODE and app["ready"] is False
    assert done["state"]["terminated"]["exitCode"] == 0
    assert final.status["phase"] == "Failed" and final.next_at is None
    ready = next(x for x in final.status["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready.get("reason")) == ("False", "PodFailed")
    # Stopped again (another update of a pod a finalizer holds): nothing more happens.
    k.pod["status"] = final.status
    assert sync_pod(k.pod, T0 + 20, HOST, stopping=True) == PodSync(final.status, None)


def test_a_pod_deleted_before_it_started_stays_as_it_was() -> None:
    k = Kubelet(make_pod(c("app", "nginx")))
    assert sync_pod(k.pod, T0, HOST, stopping=True) == PodSync(k.pod["status"], None)
    k.sync()  # ContainerCreating
    final = sync_pod(k.pod, T0 + 1, HOST, stopping=True)
    assert final.actions == [] and final.status["phase"] == "Pending"
