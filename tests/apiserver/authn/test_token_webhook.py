"""The token authentication webhook through a real API server and kubectl, with a local HTTPS webhook on
127.0.0.1 answering TokenReviews (`--authentication-token-webhook-config-file`, v1): a token only the webhook
knows authenticates (`kubectl auth whoami` shows its user and groups), an unknown one is 401, the review
carries the API audiences, answers are cached, a TokenReview is answered through the webhook too, and a
webhook that is down refuses the tokens only it could accept."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from aiohttp import web

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.webhook_server import WebhookServer

from .conftest import ISSUER, token_kubeconfig

CAROL_TOKEN = "carol-knows-only-the-webhook"
BROKEN_TOKEN = "an-expired-token"
STATIC_TOKEN = "static-token-for-dave"


class TokenReviewer(WebhookServer):
    """The remote authenticator: it knows carol's token, refuses an expired one with an error, and no other."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.reviews: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def asked(self, token: str) -> int:
        with self.lock:
            return sum(1 for r in self.reviews if r["spec"]["token"] == token)

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        with self.lock:
            self.reviews.append(review)
        token = review["spec"]["token"]
        status: dict[str, Any] = {"authenticated": False}
        if token == CAROL_TOKEN:
            status = {"authenticated": True, "user": {"username": "carol", "uid": "c-42", "groups": ["auditors"],
                                                      "extra": {"example.com/team": ["red"]}}}  # fmt: skip
        elif token == BROKEN_TOKEN:
            status = {"authenticated": False, "error": "the token has expired"}
        return web.json_response({"apiVersion": review["apiVersion"], "kind": "TokenReview", "status": status})


@pytest.fixture(scope="module")
def reviewer() -> Iterator[TokenReviewer]:
    server = TokenReviewer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(reviewer: TokenReviewer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerProcess]:
    d = tmp_path_factory.mktemp("token-webhook")
    config = reviewer.write_kubeconfig(d / "authn.kubeconfig", "/authenticate")
    token_file = d / "tokens.csv"
    token_file.write_text(f"{STATIC_TOKEN},dave,d-1\n")
    # The API server's own 10 s cache of accepted tokens is off: what is cached here is the webhook's.
    old = os.environ.get("PYK8S_TOKEN_SUCCESS_CACHE_TTL")
    os.environ["PYK8S_TOKEN_SUCCESS_CACHE_TTL"] = "0"
    try:
        server = APIServerProcess(extra_args=(
            f"--token-auth-file={token_file}", f"--authentication-token-webhook-config-file={config}",
            "--authentication-token-webhook-version=v1",
        )).start()  # fmt: skip
    finally:
        if old is None:
            os.environ.pop("PYK8S_TOKEN_SUCCESS_CACHE_TTL", None)
        else:
            os.environ["PYK8S_TOKEN_SUCCESS_CACHE_TTL"] = old
    yield server
    server.cleanup()


def kubectl_with(cluster: APIServerProcess, token: str, *args: str) -> Any:
    return cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, token)), *args)


def test_a_token_only_the_webhook_knows_authenticates(cluster, reviewer):
    out = kubectl_with(cluster, CAROL_TOKEN, "auth", "whoami", "-o", "json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)["status"]["userInfo"]
    assert info == {"username": "carol", "uid": "c-42", "groups": ["auditors", "system:authenticated"],
                    "extra": {"example.com/team": ["red"]}}  # fmt: skip
    review = next(r for r in reviewer.reviews if r["spec"]["token"] == CAROL_TOKEN)
    assert review["apiVersion"] == "authentication.k8s.io/v1" and review["kind"] == "TokenReview"
    assert review["spec"] == {"token": CAROL_TOKEN, "audiences": [ISSUER]}


def test_an_unknown_token_is_unauthorized(cluster, reviewer):
    # (over HTTP/1.1: kubectl's HTTP/2 connection is closed by the server's pending-connection guard before it
    # reads the 401, which is another matter)
    for token in ("nobody-knows-this-token", BROKEN_TOKEN):
        status, _, body = cluster.raw_request("GET", "/api", headers={"Authorization": f"Bearer {token}"})
        assert status == 401
        assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip


def test_the_servers_own_tokens_do_not_reach_the_webhook(cluster, reviewer):
    out = kubectl_with(cluster, STATIC_TOKEN, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert out.stdout == "dave"
    assert reviewer.asked(STATIC_TOKEN) == 0


def test_answers_are_cached_refusals_too_but_not_errors(cluster, reviewer):
    for _ in range(3):
        assert cluster.raw_request("GET", "/version", headers={"Authorization": f"Bearer {CAROL_TOKEN}"})[0] == 200
        cluster.raw_request("GET", "/version", headers={"Authorization": "Bearer cached-refusal"})
        cluster.raw_request("GET", "/version", headers={"Authorization": f"Bearer {BROKEN_TOKEN}"})
    assert reviewer.asked(CAROL_TOKEN) == 1
    assert reviewer.asked("cached-refusal") == 1
    assert reviewer.asked(BROKEN_TOKEN) >= 3  # a refusal with an error is asked again each time


def test_a_token_review_is_answered_through_the_webhook(cluster, reviewer):
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": CAROL_TOKEN, "audiences": ["other-audience"]}}  # fmt: skip
    status, body = cluster.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    # the webhook names no audience: its answer is for the API audiences, not the one asked for
    assert status == 201 and body["status"] == {"user": {}, "error": "invalid bearer token"}
    asked = [r for r in reviewer.reviews if r["spec"].get("audiences") == ["other-audience"]]
    assert len(asked) == 1
    review["spec"]["audiences"] = [ISSUER]
    status, body = cluster.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert status == 201 and body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "carol" and body["status"]["audiences"] == [ISSUER]
    review["spec"]["token"] = BROKEN_TOKEN
    status, body = cluster.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert status == 201 and body["status"] == {"user": {}, "error": "the token has expired"}


def test_a_webhook_that_is_down_refuses_its_tokens(reviewer, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    config = reviewer.write_kubeconfig(tmp_path / "authn.kubeconfig", "/authenticate", port=closed)
    server = APIServerProcess(extra_args=(f"--authentication-token-webhook-config-file={config}",)).start()
    try:
        assert server.kubectl("get", "namespaces").returncode == 0  # the admin's own credentials still work
        status, _, body = server.raw_request("GET", "/api", headers={"Authorization": f"Bearer {CAROL_TOKEN}"})
        assert status == 401 and json.loads(body)["message"] == "Unauthorized"
        assert "connection refused" in server.log_tail(20000)
    finally:
        server.cleanup()


def test_a_kubeconfig_that_cannot_be_used_stops_the_server(tmp_path):
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": []}))
    with pytest.raises(RuntimeError, match="invalid configuration"):
        APIServerProcess(extra_args=(f"--authentication-token-webhook-config-file={bad}",)).start(timeout=20)
