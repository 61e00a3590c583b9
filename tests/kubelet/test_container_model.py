"""The simulated container's behaviour model: shell idioms, the pyk8s.io/simulate annotation, usage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.kubelet.container_model import (
    ANNOTATION,
    DEFAULT_CPU_NANOCORES,
    DEFAULT_MEMORY_BYTES,
    Behaviour,
    annotation_error,
    behaviour,
    command_behaviour,
    usage,
)


@pytest.mark.parametrize(
    ("argv", "run", "code", "logs"),
    [
        ([], None, 0, ()),
        (["nginx", "-g", "daemon off;"], None, 0, ()),
        (["echo", "hi"], 0.0, 0, ((0.0, "hi"),)),
        (["/bin/echo", "hello", "world"], 0.0, 0, ((0.0, "hello world"),)),
        (["true"], 0.0, 0, ()),
        (["false"], 0.0, 1, ()),
        (["sleep", "5"], 5.0, 0, ()),
        (["sleep", "1m", "30"], 90.0, 0, ()),
        (["sleep", "infinity"], None, 0, ()),
        (["sh", "-c", "echo hi; sleep 5; exit 3"], 5.0, 3, ((0.0, "hi"),)),
        (["/bin/sh", "-c", "sleep 2 && echo 'done now'"], 2.0, 0, ((2.0, "done now"),)),
        (["sh", "-c", "false && echo never"], 0.0, 1, ()),
        (["sh", "-c", "false || echo fallback"], 0.0, 0, ((0.0, "fallback"),)),
        (["sh", "-c", "echo a\necho b\nexit 1"], 0.0, 1, ((0.0, "a"), (0.0, "b"))),
        (["sh", "-c", "echo start; while true; do sleep 1; done"], None, 0, ((0.0, "start"),)),
        (["bash", "-c", "exit 300"], 0.0, 44, ()),
        (["sh", "-c", "echo 'unbalanced"], None, 0, ()),
        (["sh", "-c", "false"], 0.0, 1, ()),
        (["sh", "-c", ""], 0.0, 0, ()),
    ],
)
def test_command_idioms(argv: list[str], run: float | None, code: int, logs: tuple[Any, ...]) -> None:
    b = command_behaviour(argv)
    assert (b.run_seconds, b.exit_code, b.logs) == (run, code, logs)


def _pod(annotation: Any = None, **container: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    c = {"name": "app", "image": "busybox", **container}
    md: dict[str, Any] = {"name": "p"}
    if annotation is not None:
        md["annotations"] = {ANNOTATION: annotation if isinstance(annotation, str) else json.dumps(annotation)}
    return {"metadata": md, "spec": {"containers": [c]}}, c


def test_annotation_overrides_the_command() -> None:
    pod, c = _pod({"runSeconds": 3, "exitCode": 1, "readySeconds": 2, "logs": ["x", "y"]}, command=["sleep", "9"])
    assert behaviour(pod, c) == Behaviour(3.0, 1, 2.0, None, None, ((0.0, "x"), (0.0, "y")))


def test_exit_code_alone_exits_at_once_and_per_container_keys_win() -> None:
    pod, c = _pod({"exitCode": 2, "containers": {"app": {"runSeconds": None}, "other": {"exitCode": 0}}})
    assert behaviour(pod, c).run_seconds is None and behaviour(pod, c).exit_code == 2
    pod, c = _pod({"exitCode": 2})
    assert (behaviour(pod, c).run_seconds, behaviour(pod, c).exit_code) == (0.0, 2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", "not JSON"),
        ("[1]", "want a JSON object"),
        ({"runSecs": 1}, "runSecs: unknown key"),
        ({"runSeconds": -1}, "want a number of seconds"),
        ({"exitCode": 256}, "want an integer 0-255"),
        ({"exitCode": True}, "want an integer 0-255"),
        ({"cpu": "lots"}, "want a quantity"),
        ({"cpu": "-1"}, "want a quantity >= 0"),
        ({"containers": {"app": {"memory": "-64Mi"}}}, "containers.app.memory: want a quantity >= 0"),
        ({"logs": "one"}, "want a list of strings"),
        ({"containers": {"app": {"containers": {}}}}, "containers.app.containers: unknown key"),
    ],
)
def test_bad_annotation_is_reported_and_ignored(raw: Any, message: str) -> None:
    pod, c = _pod(raw, command=["sleep", "4"])
    err = annotation_error(pod)
    assert err is not None and message in err
    assert behaviour(pod, c) == command_behaviour(["sleep", "4"])


def test_usage_from_annotation_requests_limits_or_default() -> None:
    pod, c = _pod({"cpu": "250m", "memory": "64Mi"}, resources={"requests": {"cpu": "1", "memory": "1Gi"}})
    assert usage(pod, c) == (250_000_000, 64 * 1024 * 1024)
    pod, c = _pod(resources={"requests": {"cpu": "100m"}, "limits": {"memory": "128Mi"}})
    assert usage(pod, c) == (100_000_000, 128 * 1024 * 1024)
    pod, c = _pod()
    assert usage(pod, c) == (DEFAULT_CPU_NANOCORES, DEFAULT_MEMORY_BYTES)


@given(st.lists(st.text(max_size=12), max_size=6), st.text(max_size=40))
def test_model_never_raises_and_is_deterministic(argv: list[str], script: str) -> None:
    for words in (argv, ["sh", "-c", script]):
        b = command_behaviour(words)
        assert b == command_behaviour(list(words))
        assert b.run_seconds is None or b.run_seconds >= 0
        assert 0 <= b.exit_code <= 255
        assert all(t <= (b.run_seconds if b.run_seconds is not None else float("inf")) for t, _ in b.logs)
