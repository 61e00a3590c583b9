"""Simulated containers through a real API server and a `pyk8s nodes` process, seen with the real kubectl: exits
and restart policies, CrashLoopBackOff with its BackOff events, activeDeadlineSeconds, readiness delays, init
containers before the app, `kubectl debug`, and a restarted process carrying on from the stored statuses."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.api.gotime import parse
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

from .test_hollow_nodes import kubectl_json, nodes_with_prefix

NODE = "sc-0"


def pod(
    name: str, *containers: dict[str, Any], policy: str = "Always", simulate: Any = None, **spec: Any
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if simulate is not None:
        md["annotations"] = {"pyk8s.io/simulate": json.dumps(simulate)}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"nodeName": NODE, "restartPolicy": policy, "containers": list(containers), **spec}}  # fmt: skip
    return body


PODS = [
    pod("crash", {"name": "app", "image": "busybox", "command": ["sh", "-c", "exit 1"]}, policy="OnFailure"),
    pod("hello", {"name": "app", "image": "busybox", "command": ["echo", "hi"]}, policy="Never"),
    pod("deadline", {"name": "app", "image": "nginx"}, activeDeadlineSeconds=2),
    pod(
        "slow-ready",
        {"name": "app", "image": "nginx", "readinessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 3}},
    ),
    pod(
        "inits",
        {"name": "app", "image": "nginx"},
        simulate={"containers": {"setup": {"runSeconds": 1}}},
        initContainers=[
            {"name": "setup", "image": "busybox"},
            {"name": "migrate", "image": "busybox", "command": ["true"]},
        ],
    ),
    pod("target", {"name": "app", "image": "nginx"}),
    pod(
        "misannotated",
        {"name": "app", "image": "busybox", "command": ["echo", "hi"]},
        policy="Never",
        simulate={"runSecs": 60},
    ),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[APIServerProcess, list[ComponentProcess]]]:
    server = APIServerProcess().start()
    procs = [start_nodes(server)]
    try:
        wait_for("the node", lambda: NODE in nodes_with_prefix(server, "sc-"))
        for body in PODS:
            server.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        yield server, procs
    finally:
        procs[-1].stop()
        server.cleanup()


def start_nodes(server: APIServerProcess) -> ComponentProcess:
    proc = ComponentProcess(
        "nodes", server.kubeconfig, "--count", "1", "--name-prefix", "sc-", log_dir=server.dir, secure_port=False
    )
    return proc.start()


def get(server: APIServerProcess, name: str) -> dict[str, Any]:
    return kubectl_json(server, "get", "pod", name)  # type: ignore[no-any-return]


def events(server: APIServerProcess, name: str) -> list[tuple[str, str, str]]:
    items = kubectl_json(server, "get", "events", "--field-selector", f"involvedObject.name={name}")["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items]


def test_a_failing_container_restarts_with_back_off(cluster):
    server, _ = cluster
    seen: set[str] = set()

    def restarted_twice() -> dict[str, Any] | None:
        (app,) = get(server, "crash")["status"].get("containerStatuses") or [{}]
        seen.add((app.get("state") or {}).get("waiting", {}).get("reason", ""))
        return app if app.get("restartCount", 0) >= 2 else None

    app = wait_for("two restarts", restarted_twice, timeout=40)
    assert "CrashLoopBackOff" in seen
    last = app["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")
    p = get(server, "crash")
    assert p["status"]["phase"] == "Running"
    uid = p["metadata"]["uid"]
    got = wait_for("BackOff events", lambda: [e for e in events(server, "crash") if e[1] == "BackOff"])
    assert got[0] == ("Warning", "BackOff", f"Back-off restarting failed container app in pod crash_default({uid})")
    assert ("Normal", "Pulled", 'Container image "busybox" already present on machine') in events(server, "crash")
    table = server.kubectl("get", "pod", "crash", "--no-headers", check=True).stdout.split()
    assert table[2] in ("CrashLoopBackOff", "Error", "Running") and int(table[3]) >= 2


def test_echo_with_restart_policy_never_succeeds(cluster):
    server, _ = cluster
    p = wait_for("Succeeded", lambda: (p := get(server, "hello"))["status"].get("phase") == "Succeeded" and p)
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert server.kubectl("get", "pod", "hello", "--no-headers", check=True).stdout.split()[2] == "Completed"


def test_an_annotation_the_model_cannot_read_is_ignored_with_a_warning(cluster):
    server, _ = cluster
    wait_for("Succeeded", lambda: get(server, "misannotated")["status"].get("phase") == "Succeeded")
    warning = ("Warning", "InvalidSimulation", "ignored: pyk8s.io/simulate: runSecs: unknown key")
    wait_for("the warning", lambda: warning in events(server, "misannotated"))


def test_active_deadline_fails_the_pod(cluster):
    server, _ = cluster
    p = wait_for("Failed", lambda: (p := get(server, "deadline"))["status"].get("phase") == "Failed" and p)
    status = p["status"]
    assert (status["reason"], status["message"]) == (
        "DeadlineExceeded", "Pod was active on the node longer than the specified deadline",
    )  # fmt: skip
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert ("Normal", "DeadlineExceeded", status["message"]) in wait_for(
        "the event", lambda: (ev := events(server, "deadline")) and any(e[1] == "DeadlineExceeded" for e in ev) and ev
    )
    assert ("Normal", "Killing", "Stopping container app") in events(server, "deadline")


def test_readiness_waits_for_the_initial_delay(cluster):
    server, _ = cluster

    def ready_condition() -> dict[str, Any] | None:
        conds = {c["type"]: c for c in get(server, "slow-ready")["status"].get("conditions") or ()}
        return conds if conds.get("Ready", {}).get("status") == "True" else None

    conds = wait_for("Ready", ready_condition, timeout=30)
    app = get(server, "slow-ready")["status"]["containerStatuses"][0]
    started = app["state"]["running"]["startedAt"]
    # Ready 3 s after the container started, not before.
    assert conds["Ready"]["lastTransitionTime"] >= started
    assert parse(conds["Ready"]["lastTransitionTime"])[0] - parse(started)[0] >= 3


def test_init_containers_complete_before_the_app_starts(cluster):
    server, _ = cluster
    p = wait_for("Running", lambda: (p := get(server, "inits"))["status"].get("phase") == "Running" and p)
    setup, migrate = p["status"]["initContainerStatuses"]
    app = p["status"]["containerStatuses"][0]
    assert setup["state"]["terminated"]["reason"] == "Completed" and migrate["state"]["terminated"]["exitCode"] == 0
    assert migrate["state"]["terminated"]["startedAt"] >= setup["state"]["terminated"]["finishedAt"]
    assert app["state"]["running"]["startedAt"] >= setup["state"]["terminated"]["finishedAt"]
    assert setup["state"]["terminated"]["finishedAt"] > setup["state"]["terminated"]["startedAt"]  # ran 1 s


def test_kubectl_debug_runs_an_ephemeral_container(cluster):
    server, _ = cluster
    wait_for("Running", lambda: get(server, "target")["status"].get("phase") == "Running")
    out = server.kubectl("debug", "pod/target", "--image=busybox", "--profile=general", check=True).stdout
    name = out.split("debugger-", 1)[1].split(".", 1)[0]

    def shown() -> dict[str, Any] | None:
        for s in get(server, "target")["status"].get("ephemeralContainerStatuses") or ():
            if s["name"] == f"debugger-{name}" and "running" in s["state"]:
                return s
        return None

    status = wait_for("the ephemeral container running", shown)
    assert status["image"] == "docker.io/library/busybox:latest" and status["ready"] is False
    assert get(server, "target")["status"]["phase"] == "Running"


def test_a_restarted_process_carries_on_from_the_stored_statuses(cluster):
    server, procs = cluster
    wait_for("Running", lambda: get(server, "target")["status"].get("phase") == "Running")
    crash = pod("crash2", {"name": "app", "image": "busybox", "command": ["false"]}, policy="OnFailure")
    server.kubectl("create", "-f", "-", input=json.dumps(crash), check=True)

    def backing_off() -> dict[str, Any] | None:
        (app,) = get(server, "crash2")["status"].get("containerStatuses") or [{}]
        return app if (app.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff" else None

    app = wait_for("CrashLoopBackOff", backing_off)
    assert app["restartCount"] == 1
    before = {name: get(server, name)["status"] for name in ("target", "hello")}
    procs[-1].kill()
    procs.append(start_nodes(server))

    def restarted() -> dict[str, Any] | None:
        (app,) = get(server, "crash2")["status"]["containerStatuses"]
        return app if app["restartCount"] > 1 else None

    # The back-off goes on where it was, read back from the status: the restart comes 10 s after the exit.
    again = wait_for("the restart after the back-off", restarted, timeout=40)
    assert again["restartCount"] == 2
    finished = app["lastState"]["terminated"]["finishedAt"]
    assert parse(again["lastState"]["terminated"]["startedAt"])[0] - parse(finished)[0] == 10
    # A running container is not started again; a finished pod stays as it was.
    target = get(server, "target")["status"]
    assert target["containerStatuses"][0]["state"] == before["target"]["containerStatuses"][0]["state"]
    assert target["podIP"] == before["target"]["podIP"]
    assert get(server, "hello")["status"] == before["hello"]


def test_a_pod_a_finalizer_holds_is_stopped_once(cluster):
    server, _ = cluster
    held = pod("held", {"name": "app", "image": "nginx"})
    held["metadata"]["finalizers"] = ["example.com/hold"]
    server.kubectl("create", "-f", "-", input=json.dumps(held), check=True)
    wait_for("Running", lambda: get(server, "held")["status"].get("phase") == "Running")
    server.kubectl("delete", "pod", "held", "--wait=false", check=True)

    def killing() -> list[dict[str, Any]]:
        items = kubectl_json(server, "get", "events", "--field-selector", "involvedObject.name=held")["items"]
        return [e for e in items if e["reason"] == "Killing"]

    wait_for("the Killing event", killing)
    for i in range(3):  # each update shows the node the terminating pod again
        server.kubectl("label", "pod", "held", f"round={i}", "--overwrite", check=True)
    time.sleep(2)  # the node's event writes (correlated into one Event's count) would have landed by now
    assert [e.get("count", 1) for e in killing()] == [1]
    # The node wrote the final status, as a kubelet does before it confirms the deletion.
    status = get(server, "held")["status"]
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    server.kubectl("patch", "pod", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=True)
    wait_for("the pod gone", lambda: server.kubectl("get", "pod", "held").returncode != 0)
