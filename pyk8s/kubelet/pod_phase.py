"""The pod phase and the kubelet's pod conditions, worked out from the container statuses (upstream:
pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status/generate.go), as v1.32 does them with its default
feature gates (SidecarContainers and PodReadyToStartContainersCondition on)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .pod_status import _condition

Pod = Mapping[str, Any]
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


def get_phase(spec: Mapping[str, Any], statuses: Mapping[str, Mapping[str, Any]], *, pod_is_terminal: bool) -> str:
    """The pod phase from its init and app container statuses (upstream getPhase, v1.32)."""
    policy = spec.get("restartPolicy") or "Always"
    pending_init = pending_sidecar = failed_init = 0
    unknown = running = waiting = stopped = succeeded = 0
    inits: Sequence[Mapping[str, Any]] = spec.get("initContainers") or ()

    def last_exit(s: Mapping[str, Any]) -> int | None:
        t = (s.get("lastState") or {}).get("terminated")
        return int(t.get("exitCode") or 0) if isinstance(t, dict) else None

    for c in inits:
        s = statuses.get(c.get("name", ""))
        st = (s or {}).get("state") or {}
        if c.get("restartPolicy") == "Always":
            if s is None:
                unknown += 1
            elif "running" in st:
                pending_sidecar += 0 if s.get("started") else 1
                running += 1
            elif "waiting" in st and last_exit(s) is None:
                pending_sidecar += 1
                waiting += 1
            elif "terminated" not in st and "waiting" not in st:
                pending_sidecar += 1
                unknown += 1
            continue
        if s is None or "running" in st:
            pending_init += 1
        elif "terminated" in st:
            failed_init += 1 if st["terminated"].get("exitCode", 0) != 0 else 0
        elif "waiting" in st and last_exit(s) is not None:
            failed_init += 1 if last_exit(s) != 0 else 0
        else:
            pending_init += 1
    has_started = False
    for c in spec.get("containers") or ():
        s = statuses.get(c.get("name", ""))
        st = (s or {}).get("state") or {}
        if s is None:
            unknown += 1
        elif "running" in st:
            running += 1
            has_started = True
        elif "terminated" in st:
            stopped += 1
            succeeded += 1 if st["terminated"].get("exitCode", 0) == 0 else 0
            has_started = True
        elif "waiting" in st:
            if last_exit(s) is not None:
                stopped += 1
                has_started = True
            else:
                waiting += 1
        else:
            unknown += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or (pending_sidecar and not has_started) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if pod_is_terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _go_list(names: Iterable[str]) -> str:
    return "[" + " ".join(names) + "]"


def pod_conditions(
    pod: Pod, statuses: Mapping[str, Mapping[str, Any]], phase: str, now: str, *, sandbox: bool
) -> list[dict[str, Any]]:
    """The kubelet's conditions after any it does not own, in its order (upstream status/generate.go)."""
    spec = pod.get("spec") or {}
    old = [c for c in (pod.get("status") or {}).get("conditions") or () if isinstance(c, dict)]
    previous = {str(c.get("type")): c for c in old}
    out: list[dict[str, Any]] = [dict(c) for c in old if c.get("type") not in KUBELET_CONDITIONS]
    inits: Sequence[Mapping[str, Any]] = spec.get("initContainers") or ()
    apps: Sequence[Mapping[str, Any]] = spec.get("containers") or ()

    unknown_init, incomplete = [], []
    for c in inits:
        s = statuses.get(c.get("name", ""))
        if s is None:
            unknown_init.append(c.get("name", ""))
        elif not (s.get("started") if c.get("restartPolicy") == "Always" else s.get("ready")):
            incomplete.append(c.get("name", ""))
    app_started = any(
        "running" in (s.get("state") or {}) or "terminated" in (s.get("state") or {})
        for c in apps
        if (s := statuses.get(c.get("name", ""))) is not None
    )
    if phase == "Succeeded" and not unknown_init:
        initialized: dict[str, str] = {"status": "True", "reason": "PodCompleted"}
    elif app_started:
        initialized = {"status": "True"}
    else:
        msgs = []
        if unknown_init:
            msgs.append(f"containers with unknown status: {_go_list(unknown_init)}")
        if incomplete:
            msgs.append(f"containers with incomplete status: {_go_list(incomplete)}")
        initialized = (
            {"status": "False", "reason": "ContainersNotInitialized", "message": ", ".join(msgs)}
            if msgs
            else {"status": "True"}
        )

    unknown, unready = [], []
    for c in [*(c for c in inits if c.get("restartPolicy") == "Always"), *apps]:
        s = statuses.get(c.get("name", ""))
        if s is None:
            unknown.append(c.get("name", ""))
        elif not s.get("ready"):
            unready.append(c.get("name", ""))
    if (phase == "Succeeded" and not unknown) or phase == "Failed":
        containers_ready: dict[str, str] = {
            "status": "False", "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed"
        }  # fmt: skip
    else:
        msgs = []
        if unknown:
            msgs.append(f"containers with unknown status: {_go_list(unknown)}")
        if unready:
            msgs.append(f"containers with unready status: {_go_list(unready)}")
        containers_ready = (
            {"status": "False", "reason": "ContainersNotReady", "message": ", ".join(msgs)}
            if msgs
            else {"status": "True"}
        )
    ready = dict(containers_ready)
    if ready["status"] == "True":
        gate_msgs = []
        for gate in spec.get("readinessGates") or ():
            ctype = gate.get("conditionType", "") if isinstance(gate, dict) else ""
            gate = previous.get(ctype)
            if gate is None:
                gate_msgs.append(f'corresponding condition of pod readiness gate "{ctype}" does not exist.')
            elif gate.get("status") != "True":
                gate_msgs.append(f'the status of pod readiness gate "{ctype}" is not "True", but {gate.get("status")}')
        if gate_msgs:
            ready = {"status": "False", "reason": "ReadinessGatesNotReady", "message": ", ".join(gate_msgs)}

    def cond(type_: str, fields: Mapping[str, str]) -> dict[str, Any]:
        extra = {k: v for k, v in fields.items() if k != "status"}
        return _condition(type_, fields["status"], now, previous, **extra)

    out.append(cond("PodReadyToStartContainers", {"status": "True" if sandbox else "False"}))
    out.append(cond("Initialized", initialized))
    out.append(cond("Ready", ready))
    out.append(cond("ContainersReady", containers_ready))
    scheduled = previous.get("PodScheduled")
    out.append(dict(scheduled) if scheduled else cond("PodScheduled", {"status": "True"}))
    return out
