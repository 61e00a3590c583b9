"""The shared webhook client (pyk8s.apiserver.webhook) against a real local HTTPS server: a client built from a
kubeconfig file presents its credentials and verifies the server with the file's CA; answers are decoded as
client-go's Into decodes them, with its error texts; which failures are retried, and how many times."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from pyk8s.apiserver.webhook import (
    Answer,
    Backoff,
    CallError,
    SetupError,
    WebhookClient,
    decode_object,
    error_answer,
    should_retry,
    with_exponential_backoff,
)
from pyk8s.testing.webhook_server import WebhookServer

SAR = "authorization.k8s.io/v1"


class Echo(WebhookServer):
    """Answers with what the test sets; records the headers and bodies it is sent."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.seen: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.answers: list[web.Response] = []
        self.lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.Response:
        with self.lock:
            self.seen.append((request.path_qs, dict(request.headers), await request.json()))
            if self.answers:
                return self.answers.pop(0)
        return web.json_response({"apiVersion": SAR, "kind": "SubjectAccessReview", "status": {"allowed": True}})


@pytest.fixture(scope="module")
def echo():
    server = Echo().start()
    yield server
    server.stop()


async def test_a_kubeconfig_client_posts_to_the_servers_path_with_its_credentials(echo, tmp_path):
    config = echo.write_kubeconfig(tmp_path / "hook.kubeconfig", "/authorize/", token="s3cret")
    client = WebhookClient.from_kubeconfig(str(config))
    try:
        answer = await client.post_json({"kind": "SubjectAccessReview"})
    finally:
        await client.close()
    assert answer.status == 200
    path, headers, body = echo.seen[-1]
    assert path == "/authorize?timeout=30s"  # cleaned as Go's path.Join does, with the client's timeout
    assert headers["Authorization"] == "Bearer s3cret" and headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("kube-apiserver/v1.32")
    assert body == {"kind": "SubjectAccessReview"}
    assert decode_object(answer, SAR, "SubjectAccessReview")["status"] == {"allowed": True}


async def test_a_server_the_kubeconfigs_ca_does_not_vouch_for_is_refused(echo, tmp_path):
    other = WebhookServer(echo.handle)  # another CA, never started: only its certificate is used
    config = other.write_kubeconfig(tmp_path / "hook.kubeconfig", "/x", port=echo.port)
    client = WebhookClient.from_kubeconfig(str(config))
    try:
        with pytest.raises(CallError) as info:
            await client.post_json({})
    finally:
        await client.close()
    assert str(info.value) == (
        f'Post "https://127.0.0.1:{echo.port}/x?timeout=30s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )


def test_a_kubeconfig_that_cannot_be_used(tmp_path: Path):
    path = tmp_path / "bad.kubeconfig"
    path.write_text(yaml.safe_dump({"clusters": [{"name": "c", "cluster": {"server": "https://x"}}]}))
    with pytest.raises(SetupError, match=r"^invalid configuration: no context chosen"):
        WebhookClient.from_kubeconfig(str(path))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Answer(200, "application/json", b'{"apiVersion":"v1","kind":"Status"}'),
         "converting (v1.Status) to (v1.SubjectAccessReview): unknown conversion"),
        (Answer(200, "application/json", b'{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview"}'),
         "converting (v1beta1.SubjectAccessReview) to (v1.SubjectAccessReview): unknown conversion"),
        (Answer(200, "application/json", b'{"kind":"Pod","apiVersion":"v1"}'),
         'no kind "Pod" is registered for version "v1" in scheme "k8s.io/apiserver/pkg/util/webhook/client.go:71"'),
        (Answer(200, "application/json", b"[1]"), "couldn't get version/kind; json parse error: json: cannot "
         'unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
         'Kind string "json:\\"kind,omitempty\\"" }'),
        (Answer(200, "application/json", b""), "0-length response with status code: 200 and content type: application/json"),
        (Answer(503, "text/plain", b"down"), "the server is currently unable to handle the request"),
        (Answer(500, "text/plain", b"boom"),
         'an error on the server ("boom") has prevented the request from succeeding'),
    ],
)  # fmt: skip
def test_answers_that_do_not_decode(answer, message):
    with pytest.raises(CallError) as info:
        decode_object(answer, SAR, "SubjectAccessReview", ("v1", "v1beta1"))
    assert str(info.value) == message


def test_an_answer_without_apiversion_or_kind_is_taken_as_the_expected_one():
    assert decode_object(Answer(200, "application/json", b'{"status":{}}'), SAR, "SubjectAccessReview") == {
        "status": {}
    }


@pytest.mark.parametrize(
    ("status", "body", "retry_after", "retried"),
    [
        (500, b"oops", None, True),
        (504, b"", None, True),
        (429, b"", None, True),
        (503, b"", 2, True),
        (503, b"", None, False),
        (400, b"", None, False),
        (403, json.dumps({"kind": "Status", "status": "Failure", "reason": "InternalError", "code": 403}).encode(),
         None, True),
    ],
)  # fmt: skip
def test_which_error_answers_are_retried(status, body, retry_after, retried):
    assert should_retry(error_answer(status, "text/plain", body, retry_after)) is retried


async def test_backoff_tries_as_many_times_as_it_has_steps_and_gives_up_on_what_is_not_retried():
    calls: list[float] = []

    async def failing() -> None:
        calls.append(time.monotonic())
        raise CallError("boom", code=500, reason="InternalError")

    with pytest.raises(CallError, match="boom"):
        await with_exponential_backoff(Backoff(duration=0.01, factor=2.0, jitter=0.0, steps=4), failing)
    assert len(calls) == 4
    assert calls[3] - calls[2] >= calls[2] - calls[1] >= 0.015  # 10 ms, then 20 ms, then 40 ms
    calls.clear()

    async def refused() -> None:
        calls.append(time.monotonic())
        raise CallError("dial tcp: connection refused")

    with pytest.raises(CallError):
        await with_exponential_backoff(Backoff(duration=0.01), refused)
    assert len(calls) == 1
    await asyncio.sleep(0)
