"""The simulated pod's life on its node: given a pod as last written, and the time, the status its kubelet writes
next and when the next thing happens (upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions
and doBackOff, pkg/kubelet/kubelet_pods.go generateAPIPodStatus, getPhase and convertToAPIContainerStatuses,
pkg/kubelet/status/generate.go, pkg/kubelet/active_deadline.go, the prober's initial delays).

Pure: `sync_pod(pod, now, ...)` reads everything from the pod (spec, `pyk8s.io/simulate`, the status written
before) and returns the status to write, the kubelet actions to report as events and the time of the next
transition. The status is the state: a process that restarts continues every pod from its stored status, and
a sync that comes late replays what happened since, at the times it happened, as far back as REPLAY_HORIZON:
what was due before that happens at its start, so that a status from long ago (or one saying year 1) costs a
few transitions rather than millions.

What the model decides (`container_model.behaviour`): how long each container instance runs and how it exits,
and when it is ready. Init containers run one at a time in order; a plain init container whose command the model
cannot read ("until deleted") completes at once with exit 0, because the model cannot know what an unknown init
command does and a pod stuck in Init would surprise more than one that starts. Restartable init containers
(sidecars) start in order and keep running; the next init container starts once the sidecar has `started`. Then
the app containers start together. On exit, the container's restart policy decides: `Always` restarts even after
exit 0, `OnFailure` after a non-zero exit, `Never` leaves it terminated; a plain init container of an `Always`
pod follows `OnFailure`, sidecars always restart, ephemeral containers never. A restart waits as the kubelet's
per-container back-off: the first at once, then 10 s doubling to 300 s, measured from the exit; a container that
ran more than 600 s before it exited starts the back-off over. While it waits the container shows
`waiting: CrashLoopBackOff`. The wait applied before the running instance is read back from the status (the
gap between the previous exit and this start), which is what lets the status alone carry the back-off.

Times are whole seconds, as the API writes them: an instance starts at the second the sync saw, and exits at
its start plus its run time.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.duration import format_go_duration
from ..api.gotime import format_utc, parse
from .container_model import Behaviour, behaviour
from .pod_phase import get_phase, pod_conditions
from .pod_status import _image_ref, container_id, creating_status

Pod = Mapping[str, Any]

BACKOFF_PERIOD = 10  # upstream containerBackOffPeriod
MAX_CONTAINER_BACKOFF = 300  # upstream MaxContainerBackOff
# A back-off entry not advanced for twice the cap is dropped (flowcontrol's hasExpired): the next exit
# restarts at once.
BACKOFF_RESET = 2 * MAX_CONTAINER_BACKOFF
KILLED_EXIT_CODE = 137  # SIGKILL: what a runtime reports for a container stopped by the kubelet
DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
TERMINAL = ("Succeeded", "Failed")
# How far back a late sync replays; at most a few dozen transitions per container fit in it (back-off).
REPLAY_HORIZON = 3600
# Transitions replayed by one sync at most (a safety net: the horizon keeps replays far below it).
_MAX_STEPS = 10_000
_BACKOFF_MESSAGE = re.compile(r"back-off (\S+) restarting")


@dataclass(frozen=True)
class Action:
    """Something the kubelet did that it reports as an event: `start` (a container instance created and
    started; `restart` when it is not the first), `backoff` (a restart put off), `kill`, `deadline`."""

    kind: str
    field_path: str = ""
    name: str = ""
    image: str = ""
    restart: bool = False


@dataclass
class PodSync:
    """What a sync of the pod comes to: the status to write (equal to the old one when nothing changed), the
    actions to report, and when the pod must be synced again (None: nothing is due until the pod changes)."""

    status: dict[str, Any]
    next_at: float | None
    actions: list[Action] = field(default_factory=list)


@dataclass
class _Container:
    spec: Mapping[str, Any]
    kind: str  # "init" (plain), "sidecar" (restartable init), "app", "ephemeral"
    path: str
    model: Behaviour
    state: str = "new"  # new, running, backoff (waiting to restart), terminated
    restarts: int = 0
    started_at: int | None = None  # the current (or, terminated, the last) instance
    finished_at: int | None = None
    exit_code: int = 0
    reason: str = ""
    last: dict[str, Any] | None = None  # lastState.terminated
    entry: int | None = None  # the back-off that the next exit would wait (None: restart at once)
    wait: int = 0  # backoff: the wait before the restart
    startup_delay: int = 0
    readiness_delay: int = 0

    def __post_init__(self) -> None:
        if self.kind in ("app", "sidecar"):
            self.startup_delay = _probe_delay(self.spec, "startupProbe")
            self.readiness_delay = _probe_delay(self.spec, "readinessProbe")

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    def policy(self, pod_policy: str) -> str:
        if self.kind == "sidecar":
            return "Always"
        if self.kind == "ephemeral":
            return "Never"
        if self.kind == "init" and pod_policy == "Always":
            return "OnFailure"
        return pod_policy

    def finish_time(self) -> float | None:
        if self.state != "running" or self.started_at is None:
            return None
        run = self.model.run_seconds
        if run is None:
            if self.kind != "init":
                return None
            run = 0.0  # see the module docstring: an unknown init command completes at once
        return self.started_at + run

    def started_time(self) -> float | None:
        if self.state != "running" or self.started_at is None:
            return None
        return self.started_at + self.startup_delay

    def ready_time(self) -> float | None:
        started = self.started_time()
        if started is None or self.kind == "ephemeral":
            return None
        assert self.started_at is not None
        return max(started, self.started_at + self.readiness_delay + self.model.ready_seconds)

    def started(self, t: float) -> bool:
        s = self.started_time()
        return s is not None and t >= s

    def ready(self, t: float) -> bool:
        if self.kind == "init":
            return self.state == "terminated" and self.exit_code == 0
        r = self.ready_time()
        return r is not None and t >= r

    def events(self) -> list[float]:
        times = [self.finish_time(), self.started_time(), self.ready_time()]
        if self.state == "backoff" and self.finished_at is not None:
            times.append(self.finished_at + self.wait)
        return [x for x in times if x is not None]


def rfc3339(seconds: float) -> str:
    return _format(math.floor(seconds))


# Pods started together share their timestamps: each is formatted and parsed once.
@functools.lru_cache(maxsize=4096)
def _format(seconds: int) -> str:
    return format_utc(seconds)


def _seconds(value: Any) -> int | None:
    return _parse(value) if isinstance(value, str) else None


@functools.lru_cache(maxsize=4096)
def _parse(value: str) -> int | None:
    try:
        return parse(value)[0]
    except ValueError:
        return None


def _probe_delay(spec: Mapping[str, Any], probe: str) -> int:
    p = spec.get(probe)
    delay = p.get("initialDelaySeconds", 0) if isinstance(p, dict) else 0
    return delay if isinstance(delay, int) and not isinstance(delay, bool) and delay > 0 else 0


def _snap_backoff(gap: float) -> int:
    """The back-off step (10, 20, ... 300 s) a restart `gap` seconds after the exit waited; 0 for at once."""
    if gap < BACKOFF_PERIOD / 2:
        return 0
    step = BACKOFF_PERIOD
    while step * 2 <= gap + 1 and step < MAX_CONTAINER_BACKOFF:
        step = min(step * 2, MAX_CONTAINER_BACKOFF)
    return step


def _next_entry(waited: int) -> int:
    return BACKOFF_PERIOD if waited == 0 else min(waited * 2, MAX_CONTAINER_BACKOFF)


def _read(c: _Container, old: Mapping[str, Any] | None) -> None:
    """Load the container's state from its previous status."""
    if not old:
        return
    state = old.get("state") or {}
    last = (old.get("lastState") or {}).get("terminated")
    c.last = dict(last) if isinstance(last, dict) else None
    restarts = old.get("restartCount", 0)
    c.restarts = restarts if isinstance(restarts, int) and restarts >= 0 else 0
    if isinstance(state.get("running"), dict):
        c.state = "running"
        c.started_at = _seconds(state["running"].get("startedAt"))
        if c.started_at is None:
            c.state = "new"
            return
        prev_finish = _seconds(c.last.get("finishedAt")) if c.last else None
        if c.restarts and prev_finish is not None:
            c.entry = _next_entry(_snap_backoff(c.started_at - prev_finish))
    elif isinstance(state.get("terminated"), dict):
        t = state["terminated"]
        c.state = "terminated"
        c.started_at = _seconds(t.get("startedAt"))
        c.finished_at = _seconds(t.get("finishedAt"))
        code = t.get("exitCode", 0)
        c.exit_code = code if isinstance(code, int) else 0
        c.reason = str(t.get("reason") or ("Completed" if c.exit_code == 0 else "Error"))
    elif c.last is not None and (state.get("waiting") or {}).get("reason") == "CrashLoopBackOff":
        c.state = "backoff"
        c.finished_at = _seconds(c.last.get("finishedAt"))
        if c.finished_at is None:
            c.state = "new"
            return
        m = _BACKOFF_MESSAGE.search(str((state.get("waiting") or {}).get("message") or ""))
        c.wait = _go_seconds(m.group(1)) if m else BACKOFF_PERIOD


def _go_seconds(text: str) -> int:
    from ..api.duration import parse_go_duration

    try:
        return max(0, parse_go_duration(text) // 1_000_000_000)
    except ValueError:
        return BACKOFF_PERIOD


def _containers(pod: Pod) -> list[_Container]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    out: list[_Container] = []
    for kind_list, key, status_key in (
        ("init", "initContainers", "initContainerStatuses"),
        ("app", "containers", "containerStatuses"),
        ("ephemeral", "ephemeralContainers", "ephemeralContainerStatuses"),
    ):
        olds = {s.get("name"): s for s in status.get(status_key) or () if isinstance(s, dict)}
        for c in spec.get(key) or ():
            if not isinstance(c, dict):
                continue
            kind = "sidecar" if kind_list == "init" and c.get("restartPolicy") == "Always" else kind_list
            rec = _Container(c, kind, f"spec.{key}{{{c.get('name', '')}}}", behaviour(pod, c))
            _read(rec, olds.get(c.get("name")))
            out.append(rec)
    return out


class _Run:
    """One sync's replay of the pod's containers up to `now`."""

    def __init__(self, pod: Pod, containers: list[_Container], now: float) -> None:
        self.pod = pod
        self.spec = pod.get("spec") or {}
        self.policy = str(self.spec.get("restartPolicy") or "Always")
        self.containers = containers
        self.inits = [c for c in containers if c.kind in ("init", "sidecar")]
        self.apps = [c for c in containers if c.kind == "app"]
        self.now = now
        self.floor = now - REPLAY_HORIZON  # nothing starts or exits earlier than this
        self.actions: list[Action] = []
        self.terminal = False
        self.reason = ""
        md = pod.get("metadata") or {}
        self.pod_ref = f"{md.get('name', '')}_{md.get('namespace', '')}({md.get('uid', '')})"
        self.deadline: float | None = None
        ads = self.spec.get("activeDeadlineSeconds")
        start = _seconds((pod.get("status") or {}).get("startTime"))
        if isinstance(ads, int) and not isinstance(ads, bool) and ads > 0 and start is not None:
            self.deadline = start + ads

    def initialized(self, t: float) -> bool:
        """Whether the init containers let the app containers start (or ever did)."""
        if any(c.state != "new" or c.restarts for c in self.apps):
            return True
        return all(c.ready(t) if c.kind == "init" else c.started(t) for c in self.inits)

    def startable(self, c: _Container, t: float) -> bool:
        if c.state != "new" or self.terminal:
            return False
        if c.kind == "ephemeral":
            return t >= self.now
        if c.kind == "app":
            return self.initialized(t)
        for before in self.inits:
            if before is c:
                return True
            if not (before.ready(t) if before.kind == "init" else before.started(t)):
                return False
        return False

    def start(self, c: _Container, at: float, *, restart: bool) -> None:
        c.state, c.started_at, c.finished_at = "running", math.floor(max(at, self.floor)), None
        image = str(c.spec.get("image", ""))
        self.actions.append(Action("start", c.path, c.name, image, restart))

    def exit(self, c: _Container, at: float) -> None:
        assert c.started_at is not None
        c.finished_at = math.floor(max(at, self.floor))
        c.exit_code = c.model.exit_code
        if c.kind == "init" and c.model.run_seconds is None:
            c.exit_code = 0  # see the module docstring
        c.reason = "Completed" if c.exit_code == 0 else "Error"
        c.state = "terminated"
        policy = c.policy(self.policy)
        if not (policy == "Always" or (policy == "OnFailure" and c.exit_code != 0)):
            return
        c.last = self.terminated(c)
        if c.entry is None or c.finished_at - c.started_at > BACKOFF_RESET:
            c.restarts += 1
            c.entry = BACKOFF_PERIOD
            self.start(c, c.finished_at, restart=True)
        else:
            c.state, c.wait = "backoff", c.entry
            self.actions.append(Action("backoff", c.path, c.name, str(c.spec.get("image", ""))))

    def terminated(self, c: _Container) -> dict[str, Any]:
        return {
            "exitCode": c.exit_code, "reason": c.reason, "startedAt": rfc3339(c.started_at or 0),
            "finishedAt": rfc3339(c.finished_at or 0), "containerID": container_id(self.pod, c.name, c.restarts),
        }  # fmt: skip

    def kill(self, c: _Container, at: float) -> None:
        if c.state == "running":
            self.actions.append(Action("kill", c.path, c.name, str(c.spec.get("image", ""))))
            c.state, c.finished_at = "terminated", math.floor(at)
            c.exit_code, c.reason = KILLED_EXIT_CODE, "Error"
        elif c.state == "backoff" and c.last is not None:
            # The exited instance is the latest; with no restart coming, it shows as it ended.
            c.state = "terminated"
            c.started_at, c.finished_at = _seconds(c.last.get("startedAt")), _seconds(c.last.get("finishedAt"))
            c.exit_code, c.reason = int(c.last.get("exitCode") or 0), str(c.last.get("reason") or "Error")

    def settle(self, t: float) -> bool:
        """Apply everything due at `t`; whether anything changed."""
        changed = False
        if self.deadline is not None and t >= self.deadline and not self.terminal:
            self.terminal, self.reason = True, DEADLINE_REASON
            self.actions.append(Action("deadline"))
            for c in self.containers:
                self.kill(c, self.deadline)
            return True
        if self.terminal:
            return False
        for c in self.containers:
            finish = c.finish_time()
            if finish is not None and finish <= t:
                self.exit(c, finish)
                changed = True
            elif c.state == "backoff" and c.finished_at is not None and c.finished_at + c.wait <= t:
                c.last = c.last or self.terminated(c)
                c.restarts += 1
                restart_at = c.finished_at + c.wait
                c.entry = _next_entry(c.wait)
                self.start(c, restart_at, restart=True)
                changed = True
        if self.pod_done():
            self.terminal = True
            for c in reversed(self.containers):
                if c.kind in ("sidecar", "ephemeral"):
                    self.kill(c, t)
            return True
        for c in self.containers:
            if self.startable(c, t):
                self.start(c, t, restart=False)
                changed = True
        return changed

    def pod_done(self) -> bool:
        """Nothing of the pod will run again: a plain init container failed for good, or every app container
        has ended and none restarts."""
        for c in self.inits:
            if c.kind == "init" and c.state == "terminated" and c.exit_code != 0:
                return True
        return bool(self.apps) and all(c.state == "terminated" for c in self.apps)

    def run(self) -> float | None:
        """Replay up to now; the time of the next transition after it."""
        times = [x for c in self.containers for x in c.events()]
        if self.deadline is not None:
            times.append(self.deadline)
        t = min([self.now, *times])
        for _ in range(_MAX_STEPS):
            while self.settle(t):
                if self.terminal:
                    break
            if self.terminal:
                return None
            upcoming = [x for c in self.containers for x in c.events() if x > t]
            if self.deadline is not None and self.deadline > t:
                upcoming.append(self.deadline)
            if t < self.now:
                upcoming.append(self.now)
            if not upcoming:
                return None
            nxt = min(upcoming)
            if nxt > self.now:
                return nxt
            t = nxt
        return self.now + 1  # too much to replay at once: carry on at the next sync


def needs_pod_ip(pod: Pod) -> bool:
    """Whether this sync creates the pod's sandbox, which takes an address from the node."""
    status = pod.get("status") or {}
    if (pod.get("spec") or {}).get("hostNetwork"):
        return False  # the node's own address
    return bool(status.get("startTime")) and not status.get("podIP") and status.get("phase") not in TERMINAL


def sync_pod(pod: Pod, now: float, host_ip: str, pod_ip: str | None = None, *, stopping: bool = False) -> PodSync:
    """The next status of `pod` (bound to this node and admitted) at time `now` (seconds since the epoch).
    `pod_ip` is the sandbox's address, needed when `needs_pod_ip(pod)`. With `stopping` (the pod is being
    deleted) nothing starts any more: what runs is stopped now and the pod's phase is worked out as a terminal
    pod's (upstream SyncTerminatingPod's final status): Succeeded or Failed once every app container has run,
    else as it was (a container that never started keeps waiting)."""
    old = pod.get("status") or {}
    if old.get("phase") in TERMINAL:
        return PodSync(dict(old), None)
    if not old.get("startTime"):
        if stopping:
            return PodSync(dict(old), None)
        # The first write: admitted, containers being created (the sandbox comes with the next step).
        return PodSync(creating_status(pod, host_ip, rfc3339(now)), now)
    containers = _containers(pod)
    run = _Run(pod, containers, now)
    if stopping:
        for c in containers:
            run.kill(c, now)
        run.terminal, next_at = True, None
    else:
        next_at = run.run()
    status = dict(old)
    ip = old.get("podIP") or (host_ip if (pod.get("spec") or {}).get("hostNetwork") else pod_ip)
    if ip:
        status.update(podIP=ip, podIPs=[{"ip": ip}])
    status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}])
    has_inits = bool((pod.get("spec") or {}).get("initContainers"))
    shown = {c.name: _container_status(run, c, has_inits) for c in containers}
    app_statuses = sorted((shown[c.name] for c in containers if c.kind == "app"), key=lambda s: s["name"])
    init_statuses = [shown[c.name] for c in containers if c.kind in ("init", "sidecar")]
    eph_statuses = sorted((shown[c.name] for c in containers if c.kind == "ephemeral"), key=lambda s: s["name"])
    status["containerStatuses"] = app_statuses
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if eph_statuses:
        status["ephemeralContainerStatuses"] = eph_statuses
    all_statuses = {s["name"]: s for s in (*app_statuses, *init_statuses)}
    phase = get_phase(pod.get("spec") or {}, all_statuses, pod_is_terminal=run.terminal)
    if run.reason:
        phase = "Failed"
        status.update(reason=DEADLINE_REASON, message=DEADLINE_MESSAGE)
    elif phase != old.get("phase"):
        status.pop("reason", None)
        status.pop("message", None)
    status["phase"] = phase
    status["conditions"] = pod_conditions(pod, all_statuses, phase, rfc3339(now), sandbox=phase not in TERMINAL)
    return PodSync(status, next_at, run.actions)


def _container_status(run: _Run, c: _Container, has_inits: bool) -> dict[str, Any]:
    image = str(c.spec.get("image", ""))
    out: dict[str, Any] = {"name": c.name}
    if c.state == "new":
        out.update(
            state={"waiting": {"reason": "PodInitializing" if has_inits else "ContainerCreating"}}, lastState={},
            ready=False, restartCount=c.restarts, image=image, imageID="",
        )  # fmt: skip
    else:
        ref, image_id = _image_ref(image)
        cid = container_id(run.pod, c.name, c.restarts)
        if c.state == "running":
            state: dict[str, Any] = {"running": {"startedAt": rfc3339(c.started_at or 0)}}
        elif c.state == "terminated":
            state = {"terminated": run.terminated(c)}
        else:
            message = (
                f"back-off {format_go_duration(c.wait * 1_000_000_000)} restarting failed container={c.name} "
                f"pod={run.pod_ref}"
            )
            state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
            cid = str((c.last or {}).get("containerID") or cid)
        out.update(
            state=state, lastState={"terminated": c.last} if c.last else {}, ready=c.ready(run.now),
            restartCount=c.restarts, image=ref, imageID=image_id, containerID=cid,
        )  # fmt: skip
    if c.kind == "ephemeral":
        out["ready"] = False  # the prober never looks at ephemeral containers: no `started` either
    else:
        out["started"] = c.started(run.now)
    return out
