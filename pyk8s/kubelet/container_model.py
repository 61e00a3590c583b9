"""What a simulated container does: how long it runs, how it exits, when it is ready, what it logs and how much
CPU and memory it uses. Nothing runs; this is the model the simulated kubelet and `kubectl top` follow.

A container runs until its pod is deleted, unless its command is a common shell idiom (`sleep N`, `echo ...`,
`true`, `false`, `exit N`, alone, as argv or inside `sh -c '...'`, joined by `;`, `&&`, `||` or newlines), in
which case it behaves as the shell would: `sh -c 'echo hi; sleep 5; exit 3'` logs "hi", runs 5 s and exits 3.
A command the model does not know (a server, a loop) runs until the pod is deleted, logging what its `echo`s
would print once.

The `pyk8s.io/simulate` annotation overrides the idioms, for tests: a JSON object with any of `runSeconds`
(null: until deleted), `exitCode`, `readySeconds` (extra delay before the container is ready), `cpu` and
`memory` (usage, as quantities), `logs` (lines printed at start); a `containers` object maps container names
to the same keys for one container. Example: `{"runSeconds": 3, "exitCode": 1, "containers": {"side": {}}}`.

Everything is a pure function of the pod: the same pod behaves the same way every time.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.quantity import QuantityError, milli_value, parse_quantity, value

ANNOTATION = "pyk8s.io/simulate"
SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
# Usage of a container that requests nothing: a small idle process.
DEFAULT_CPU_NANOCORES = 1_000_000  # 1m
DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024  # 4Mi
_KEYS = frozenset({"runSeconds", "exitCode", "readySeconds", "cpu", "memory", "logs", "containers"})


@dataclass(frozen=True)
class Behaviour:
    """One container's simulated life. `run_seconds` None runs until the pod is deleted; `logs` are (seconds
    after start, line) pairs."""

    run_seconds: float | None = None
    exit_code: int = 0
    ready_seconds: float = 0.0
    cpu_nanocores: int | None = None  # None: from the container's requests
    memory_bytes: int | None = None
    logs: tuple[tuple[float, str], ...] = ()


class SimulationError(ValueError):
    """The annotation is not what the model reads; the message says why."""


def behaviour(pod: Mapping[str, Any], container: Mapping[str, Any]) -> Behaviour:
    """The behaviour of `container` (of any kind: init, app or ephemeral) in `pod`. An annotation that does not
    parse is ignored here; `annotation_error` reports it."""
    base = command_behaviour([*(container.get("command") or ()), *(container.get("args") or ())])
    try:
        overrides = _overrides(pod, str(container.get("name", "")))
    except SimulationError:
        return base
    return _apply(base, overrides) if overrides else base


def annotation_error(pod: Mapping[str, Any]) -> str | None:
    """Why the pod's `pyk8s.io/simulate` annotation cannot be read, or None when it can (or is absent)."""
    try:
        _overrides(pod, "")
    except SimulationError as e:
        return str(e)
    return None


def usage(pod: Mapping[str, Any], container: Mapping[str, Any]) -> tuple[int, int]:
    """(CPU nanocores, memory bytes) the container uses while it runs: the annotation's, else its requests (the
    limits when only they are set, as the API server defaults requests from limits), else a small idle figure."""
    b = behaviour(pod, container)
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    cpu, memory = b.cpu_nanocores, b.memory_bytes
    if cpu is None:
        q = _quantity(requests.get("cpu") or limits.get("cpu"))
        cpu = milli_value(q) * 1_000_000 if q is not None else DEFAULT_CPU_NANOCORES
    if memory is None:
        q = _quantity(requests.get("memory") or limits.get("memory"))
        memory = value(q) if q is not None else DEFAULT_MEMORY_BYTES
    return cpu, memory


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return parse_quantity(text)
    except (QuantityError, ValueError):
        return None


def _overrides(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if raw is None:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise SimulationError(f"{ANNOTATION}: not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise SimulationError(f"{ANNOTATION}: want a JSON object")
    _check(doc, "")
    per = doc.get("containers") or {}
    if not isinstance(per, dict):
        raise SimulationError(f"{ANNOTATION}: containers: want an object of container names")
    for cname, sub in per.items():
        if not isinstance(sub, dict):
            raise SimulationError(f"{ANNOTATION}: containers.{cname}: want an object")
        _check(sub, f"containers.{cname}.")
    out = {k: v for k, v in doc.items() if k != "containers"}
    out.update(per.get(name) or {})
    return out


def _check(doc: Mapping[str, Any], prefix: str) -> None:
    for key, val in doc.items():
        where = f"{ANNOTATION}: {prefix}{key}"
        if key not in _KEYS or (prefix and key == "containers"):
            raise SimulationError(f"{where}: unknown key")
        if key in ("runSeconds", "readySeconds"):
            ok = val is None if key == "runSeconds" and val is None else _number(val) and val >= 0
            if not ok:
                raise SimulationError(f"{where}: want a number of seconds >= 0")
        elif key == "exitCode":
            if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= 255:
                raise SimulationError(f"{where}: want an integer 0-255")
        elif key in ("cpu", "memory"):
            q = _quantity(val)
            if q is None or q.sign < 0:  # usage is never negative (kubectl top would print it)
                raise SimulationError(f"{where}: want a quantity >= 0 such as 100m or 64Mi")
        elif key == "logs":
            if not isinstance(val, list) or not all(isinstance(line, str) for line in val):
                raise SimulationError(f"{where}: want a list of strings")


def _number(val: Any) -> bool:
    return isinstance(val, int | float) and not isinstance(val, bool)


def _apply(base: Behaviour, o: Mapping[str, Any]) -> Behaviour:
    run = base.run_seconds
    if "runSeconds" in o:
        run = None if o["runSeconds"] is None else float(o["runSeconds"])
    elif "exitCode" in o:
        run = 0.0 if run is None else run  # an exit code alone means the container exits at once
    cpu_q, mem_q = _quantity(o.get("cpu")), _quantity(o.get("memory"))
    return Behaviour(
        run_seconds=run,
        exit_code=int(o.get("exitCode", base.exit_code)),
        ready_seconds=float(o.get("readySeconds", base.ready_seconds)),
        cpu_nanocores=milli_value(cpu_q) * 1_000_000 if cpu_q is not None else base.cpu_nanocores,
        memory_bytes=value(mem_q) if mem_q is not None else base.memory_bytes,
        logs=tuple((0.0, line) for line in o["logs"]) if "logs" in o else base.logs,
    )


_SPLIT = re.compile(r"(;|&&|\|\||\n)")
_FOREVER = float("inf")


def command_behaviour(argv: Sequence[Any]) -> Behaviour:
    """The behaviour of a container running `argv` (command then args)."""
    words = [str(w) for w in argv]
    if not words:
        return Behaviour()  # the image's own entrypoint: a server, as far as the model knows
    prog = words[0].rsplit("/", 1)[-1]
    if prog in SHELLS and "-c" in words[1:]:
        i = words.index("-c", 1)
        return _script(words[i + 1] if i + 1 < len(words) else "")
    return _run([(words, "")])


def _script(text: str) -> Behaviour:
    """A `sh -c` script as a list of simple commands with the operator after each."""
    parts = _SPLIT.split(text)
    commands: list[tuple[list[str], str]] = []
    for i in range(0, len(parts), 2):
        op = parts[i + 1] if i + 1 < len(parts) else ""
        try:
            words = shlex.split(parts[i])
        except ValueError:
            return Behaviour()  # unbalanced quotes: not an idiom the model reads
        if words:
            commands.append((words, op))
        elif commands and op:
            commands[-1] = (commands[-1][0], op)
    return _run(commands)


def _run(commands: list[tuple[list[str], str]]) -> Behaviour:
    """Run simple commands as a shell would, keeping time, output and status; anything unknown (a server, a
    loop keyword) makes the container run until deleted."""
    elapsed, status = 0.0, 0
    logs: list[tuple[float, str]] = []
    skip_next = False
    for words, op in commands:
        if skip_next:
            skip_next = False
        else:
            prog, rest = words[0].rsplit("/", 1)[-1], words[1:]
            if prog == "sleep":
                seconds = _sleep_seconds(rest)
                if seconds is None:
                    return Behaviour(logs=tuple(logs))
                elapsed += seconds
                status = 0
            elif prog == "echo":
                newline = rest[:1] != ["-n"]
                text = " ".join(rest if newline else rest[1:])
                logs.append((elapsed, text))
                status = 0
            elif prog in ("true", ":"):
                status = 0
            elif prog == "false":
                status = 1
            elif prog == "exit":
                code = _int(rest[0]) if rest else status
                return Behaviour(
                    run_seconds=elapsed, exit_code=(code if code is not None else 2) % 256, logs=tuple(logs)
                )
            else:
                return Behaviour(logs=tuple(logs))
        # `a && b` runs b only when a succeeded; `a || b` only when it failed.
        skip_next = (op == "&&" and status != 0) or (op == "||" and status == 0)
    return Behaviour(run_seconds=elapsed, exit_code=status, logs=tuple(logs))


def _sleep_seconds(args: list[str]) -> float | None:
    """The seconds `sleep` waits (suffixes s/m/h/d summed, as GNU and busybox sleep do); None for infinity or
    anything unreadable, which the model runs until deleted."""
    total = 0.0
    for arg in args or ["?"]:
        m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", arg)
        if not m:
            return None
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return total if total != _FOREVER else None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
