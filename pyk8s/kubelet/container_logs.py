"""What a simulated container's log holds and how the kubelet's log options cut it (upstream:
pkg/kubelet/kubelet_pods.go `validateContainerLogStatus` picks the container instance from the pod status;
pkg/kubelet/kuberuntime/logs `ReadLogs` applies sinceSeconds/sinceTime, tailLines, limitBytes and timestamps).

Nothing is stored: a container instance's log is `container_model.behaviour(...).logs` laid out from the
instance's start time (`state.running.startedAt`, `state.terminated.startedAt`, or `lastState.terminated`
for `previous`), cut at the present or at the instance's end. The same pod always prints the same lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.gotime import format_utc
from ..api.meta import parse_time
from .container_model import behaviour

# The kubelet's answers to a query it cannot decode or that fails validation (server.go getContainerLogs).
UNABLE_TO_DECODE = '{"message": "Unable to decode query."}'
INVALID_REQUEST = '{"message": "Invalid request."}'
_INT64 = re.compile(r"[+-]?[0-9]{1,19}", re.ASCII)


class LogOptionsError(ValueError):
    """A query the kubelet refuses: `code` is its HTTP status, the message its body."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ContainerLogError(ValueError):
    """The container has no log to show (the kubelet answers 400 with this text)."""


@dataclass(frozen=True)
class LogOptions:
    """v1 PodLogOptions as the kubelet reads them; `since_time` in seconds since the epoch."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: float | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None

    def since(self, now: float) -> float | None:
        """The earliest log time to show: the later of now - sinceSeconds and sinceTime (kubelet NewLogOptions)."""
        since = now - self.since_seconds if self.since_seconds is not None else None
        if self.since_time is not None and (since is None or self.since_time > since):
            since = self.since_time
        return since


def go_bool(value: str) -> bool:
    """A query flag as upstream's parameter codec reads one: empty, false, f and 0 are false, anything else true."""
    return value.lower() not in ("", "false", "f", "0")


def parse_options(query: Mapping[str, str]) -> LogOptions:
    """The options of a `containerLogs` query, decoded and validated as the kubelet does; LogOptionsError if not."""
    q = dict(query)
    tail = q.pop("tail", None)
    if tail is not None:  # the kubelet's older spelling; "all" means no limit
        if tail == "all":
            q.pop("tailLines", None)
        else:
            q["tailLines"] = tail

    def integer(name: str) -> int | None:
        raw = q.get(name)
        if raw is None or raw == "":
            return None
        if not _INT64.fullmatch(raw):
            raise LogOptionsError(400, UNABLE_TO_DECODE)
        return int(raw)

    since_time = None
    if q.get("sinceTime"):
        try:
            since_time = parse_time(q["sinceTime"]).timestamp()
        except ValueError:
            raise LogOptionsError(400, UNABLE_TO_DECODE) from None
    opts = LogOptions(
        follow=go_bool(q.get("follow", "")),
        previous=go_bool(q.get("previous", "")),
        timestamps=go_bool(q.get("timestamps", "")),
        since_seconds=integer("sinceSeconds"),
        since_time=since_time,
        tail_lines=integer("tailLines"),
        limit_bytes=integer("limitBytes"),
    )
    if validation_errors(opts):
        raise LogOptionsError(422, INVALID_REQUEST)
    return opts


def validation_errors(opts: LogOptions) -> list[tuple[str, Any, str]]:
    """(field, value, detail) of each rule the options break (upstream ValidatePodLogOptions); a field "" with
    value None is a Forbidden error, the rest are Invalid."""
    errs: list[tuple[str, Any, str]] = []
    if opts.tail_lines is not None and opts.tail_lines < 0:
        errs.append(("tailLines", opts.tail_lines, "must be greater than or equal to 0"))
    if opts.limit_bytes is not None and opts.limit_bytes < 1:
        errs.append(("limitBytes", opts.limit_bytes, "must be greater than 0"))
    if opts.since_seconds is not None and opts.since_time is not None:
        errs.append(("", None, "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif opts.since_seconds is not None and opts.since_seconds < 1:
        errs.append(("sinceSeconds", opts.since_seconds, "must be greater than 0"))
    return errs


def container_spec(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The container of any kind (app, init, ephemeral) named `name` in the pod's spec."""
    spec = pod.get("spec") or {}
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(kind) or ():
            if c.get("name") == name:
                return c  # type: ignore[no-any-return]
    return None


@dataclass(frozen=True)
class Instance:
    """One run of a container: its ID and its start and end (None while it runs), in seconds since the epoch."""

    container_id: str
    started: float
    finished: float | None


def _status_of(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    status = pod.get("status") or {}
    for kind in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(kind) or ():
            if cs.get("name") == name:
                return cs  # type: ignore[no-any-return]
    return None


def _seconds(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return parse_time(text).timestamp()
    except ValueError:
        return None


def _terminated(state: Mapping[str, Any], container_id: str) -> Instance:
    started = _seconds(state.get("startedAt"))
    finished = _seconds(state.get("finishedAt"))
    if started is None:  # a container that never ran has printed nothing, as of its end
        started = finished if finished is not None else 0.0
    return Instance(container_id, started, finished if finished is not None else started)


def container_instance(pod: Mapping[str, Any], name: str, previous: bool) -> Instance:
    """The instance of container `name` whose log is asked for, chosen from the pod status as the kubelet's
    validateContainerLogStatus does; ContainerLogError with the kubelet's message when there is none."""
    pod_name = str((pod.get("metadata") or {}).get("name", ""))
    cs = _status_of(pod, name)
    if cs is None:
        raise ContainerLogError(f'container "{name}" in pod "{pod_name}" is not available')
    state = cs.get("state") or {}
    last = (cs.get("lastState") or {}).get("terminated")
    waiting, running, terminated = state.get("waiting"), state.get("running"), state.get("terminated")
    if previous:
        if not last or not last.get("containerID"):
            raise ContainerLogError(f'previous terminated container "{name}" in pod "{pod_name}" not found')
        return _terminated(last, last["containerID"])
    if running is not None:
        started = _seconds(running.get("startedAt"))
        return Instance(str(cs.get("containerID") or ""), started if started is not None else 0.0, None)
    if terminated is not None:
        # A container whose next run did not start has no ID of its own: its previous run's log is shown.
        if terminated.get("containerID"):
            return _terminated(terminated, terminated["containerID"])
        if last and last.get("containerID"):
            return _terminated(last, last["containerID"])
        raise ContainerLogError(f'container "{name}" in pod "{pod_name}" is terminated')
    if last is not None:
        if not last.get("containerID"):
            raise ContainerLogError(f'container "{name}" in pod "{pod_name}" is terminated')
        return _terminated(last, last["containerID"])
    if waiting is not None:
        reason = waiting.get("reason", "")
        detail = {
            "ErrImagePull": "image can't be pulled",
            "ImagePullBackOff": "trying and failing to pull image",
        }.get(reason, reason)
        raise ContainerLogError(f'container "{name}" in pod "{pod_name}" is waiting to start: {detail}')
    raise ContainerLogError(f'container "{name}" in pod "{pod_name}" is waiting to start - no logs yet')


def end_of(pod: Mapping[str, Any], container: Mapping[str, Any], inst: Instance) -> float | None:
    """When the instance stops printing: its recorded end, else when the model says it exits (None: never)."""
    if inst.finished is not None:
        return inst.finished
    run = behaviour(pod, container).run_seconds
    return inst.started + run if run is not None else None


def printed(
    pod: Mapping[str, Any], container: Mapping[str, Any], inst: Instance, until: float
) -> list[tuple[float, str]]:
    """The (time, line) pairs the instance printed up to `until` (and not after its end)."""
    end = end_of(pod, container, inst)
    limit = until if end is None else min(until, end)
    return [(inst.started + t, line) for t, line in behaviour(pod, container).logs if inst.started + t <= limit]


def format_time(t: float) -> str:
    """The kubelet's log timestamp: RFC 3339 with nanoseconds, trailing zeros dropped (Go's RFC3339Nano), UTC."""
    whole = int(t // 1)
    nanos = round((t - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, 0
    # Go's form for any year (a status may say a container started in year 1, Go's zero time).
    stamp = format_utc(whole).removesuffix("Z")
    if nanos:
        stamp += "." + f"{nanos:09d}".rstrip("0")
    return stamp + "Z"


def render(lines: Sequence[tuple[float, str]], opts: LogOptions, now: float) -> list[bytes]:
    """Each line as the kubelet writes it (a timestamp first with `timestamps`), after sinceSeconds/sinceTime
    and tailLines; limitBytes is the writer's business, over the whole stream."""
    since = opts.since(now)
    kept = [(t, line) for t, line in lines if since is None or t >= since]
    if opts.tail_lines is not None:
        kept = kept[len(kept) - opts.tail_lines :] if opts.tail_lines else []
    return [line_bytes(t, line, opts.timestamps) for t, line in kept]


def line_bytes(t: float, line: str, timestamps: bool) -> bytes:
    text = f"{format_time(t)} {line}\n" if timestamps else f"{line}\n"
    return text.encode()
