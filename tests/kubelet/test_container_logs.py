"""The simulated container log: which instance the kubelet reads (and its messages when there is none), the
lines it has printed by a given time, and the options that cut them."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.api.meta import parse_time
from pyk8s.kubelet.container_logs import (
    INVALID_REQUEST,
    UNABLE_TO_DECODE,
    ContainerLogError,
    LogOptions,
    LogOptionsError,
    container_instance,
    format_time,
    parse_options,
    printed,
    render,
)

T0 = "2026-01-02T03:04:05Z"
START = parse_time(T0).timestamp()


def pod(status: dict[str, Any], command: str = "echo a; sleep 2; echo b; sleep 3") -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", command]}]},
        "status": {"containerStatuses": [{"name": "c", **status}]},
    }


@pytest.mark.parametrize(
    ("status", "previous", "message"),
    [
        ({"state": {"waiting": {"reason": "ContainerCreating"}}}, False,
         'container "c" in pod "p" is waiting to start: ContainerCreating'),
        ({"state": {"waiting": {"reason": "ErrImagePull"}}}, False,
         'container "c" in pod "p" is waiting to start: image can\'t be pulled'),
        ({"state": {"waiting": {"reason": "ImagePullBackOff"}}}, False,
         'container "c" in pod "p" is waiting to start: trying and failing to pull image'),
        ({"state": {}}, False, 'container "c" in pod "p" is waiting to start - no logs yet'),
        ({"state": {"running": {"startedAt": T0}}}, True, 'previous terminated container "c" in pod "p" not found'),
        ({"state": {"terminated": {"exitCode": 1, "startedAt": T0}}}, False, 'container "c" in pod "p" is terminated'),
    ],
)  # fmt: skip
def test_no_log_messages_are_the_kubelets(status, previous, message):
    with pytest.raises(ContainerLogError) as e:
        container_instance(pod(status), "c", previous)
    assert str(e.value) == message


def test_a_container_without_status_is_not_available():
    p = pod({})
    p["status"] = {}
    with pytest.raises(ContainerLogError, match=r'^container "c" in pod "p" is not available$'):
        container_instance(p, "c", False)


def test_the_instance_comes_from_the_status():
    running = pod({"state": {"running": {"startedAt": T0}}, "containerID": "containerd://1"})
    assert container_instance(running, "c", False).started == START
    assert container_instance(running, "c", False).finished is None
    restarted = pod({
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"startedAt": T0, "finishedAt": "2026-01-02T03:04:06Z", "containerID": "x://1"}},
    })  # fmt: skip
    prev = container_instance(restarted, "c", True)
    assert (prev.container_id, prev.started, prev.finished) == ("x://1", START, START + 1)
    # With no current run, the last one's log is what is shown.
    assert container_instance(restarted, "c", False) == prev


def test_lines_appear_as_the_container_prints_them():
    p = pod({"state": {"running": {"startedAt": T0}}, "containerID": "x://1"})
    c = p["spec"]["containers"][0]
    inst = container_instance(p, "c", False)
    assert printed(p, c, inst, START + 1) == [(START, "a")]
    assert printed(p, c, inst, START + 100) == [(START, "a"), (START + 2, "b")]
    # A run that ended early printed only what it had by then.
    ended = pod({"state": {"terminated": {"startedAt": T0, "finishedAt": "2026-01-02T03:04:06Z", "containerID": "x"}}})
    assert printed(ended, c, container_instance(ended, "c", False), START + 100) == [(START, "a")]


def test_options_cut_lines():
    lines = [(START, "a"), (START + 2, "b"), (START + 4.5, "c")]
    assert render(lines, LogOptions(), START + 10) == [b"a\n", b"b\n", b"c\n"]
    assert render(lines, LogOptions(tail_lines=2), START + 10) == [b"b\n", b"c\n"]
    assert render(lines, LogOptions(tail_lines=0), START + 10) == []
    assert render(lines, LogOptions(since_seconds=7), START + 10) == [b"c\n"]
    assert render(lines, LogOptions(since_time=START + 2), START + 10) == [b"b\n", b"c\n"]
    assert render(lines[2:], LogOptions(timestamps=True), START + 10) == [b"2026-01-02T03:04:09.5Z c\n"]


def test_timestamps_are_rfc3339_nano():
    assert format_time(START) == "2026-01-02T03:04:05Z"
    assert format_time(START + 0.125) == "2026-01-02T03:04:05.125Z"
    assert format_time(START + 0.25) == "2026-01-02T03:04:05.25Z"


def test_parse_options():
    opts = parse_options({"follow": "true", "tailLines": "3", "timestamps": "1", "sinceTime": T0, "previous": "false"})
    assert opts == LogOptions(follow=True, timestamps=True, tail_lines=3, since_time=START)
    assert parse_options({"tail": "all", "tailLines": "5"}).tail_lines is None
    assert parse_options({"tail": "7"}).tail_lines == 7
    for bad, code, message in (
        ({"tailLines": "x"}, 400, UNABLE_TO_DECODE),
        ({"sinceTime": "yesterday"}, 400, UNABLE_TO_DECODE),
        ({"tailLines": "-1"}, 422, INVALID_REQUEST),
        ({"limitBytes": "0"}, 422, INVALID_REQUEST),
        ({"sinceSeconds": "0"}, 422, INVALID_REQUEST),
        ({"sinceSeconds": "5", "sinceTime": T0}, 422, INVALID_REQUEST),
    ):
        with pytest.raises(LogOptionsError) as e:
            parse_options(bad)
        assert (e.value.code, str(e.value)) == (code, message)


def test_timestamps_of_any_year_are_gos():
    # Go's zero time as a status's startedAt, and a line half a second after it: Go writes year 1 as 0001.
    year_one = -62135596800
    assert format_time(year_one) == "0001-01-01T00:00:00Z"
    assert format_time(year_one + 0.5) == "0001-01-01T00:00:00.5Z"
    assert format_time(253402300800.25) == "10000-01-01T00:00:00.25Z"
