"""The Webhook authorization mode through a real API server and kubectl, with a local HTTPS webhook on 127.0.0.1
playing the remote authorizer (`--authorization-mode=Node,RBAC,Webhook`): what it allows succeeds, what it
denies is 403 with its reason, RBAC is asked first, answers are cached, the SubjectAccessReview it receives
carries the request's attributes and selectors, and a webhook that is down lets a later authorizer decide.
Then unit tests of the review's spec and of the decision an answer makes."""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from pyk8s.api.selectors import parse_field_selector, parse_label_selector
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import ALLOW, DENY, NO_OPINION, Attributes
from pyk8s.apiserver.authz.webhook import BOTH_ERROR, decision_of, review_spec
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.webhook_server import WebhookServer

TOKENS = {
    "alice": "alice-token-0123456789",
    "bob": "bob-token-0123456789",
    "mallory": "mallory-token-0123456789",
    "erin": "erin-token-0123456789",
}
APISERVER_TOKEN = "the-apiserver-identifies-itself"
_names = itertools.count()


class Authorizer(WebhookServer):
    """The remote authorizer: alice may read configmaps and pods in namespaces called team*; mallory is denied
    everything; anyone may GET non-resource paths (discovery); erin may list configmaps, but the first time
    she is asked about the webhook fails with a 500; about others it has no opinion."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.reviews: list[dict[str, Any]] = []
        self.credentials: set[str] = set()
        self.lock = threading.Lock()
        self.erin_failures = 1

    def about(self, user: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.reviews if r["spec"].get("user") == user]

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        with self.lock:
            self.reviews.append(review)
            self.credentials.add(request.headers.get("Authorization", ""))
        spec = review["spec"]
        user, res, non = spec.get("user"), spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        status: dict[str, Any] = {"allowed": False}
        if user == "mallory":
            status = {"allowed": False, "denied": True, "reason": "mallory is banned"}
        elif non is not None and non.get("verb") == "get":
            status = {"allowed": True}
        elif (user == "alice" and res and res.get("namespace", "").startswith("team")
              and res.get("resource") in ("configmaps", "pods") and res.get("verb") in ("get", "list", "watch")):  # fmt: skip
            status = {"allowed": True, "reason": "alice reads her team's things"}
        elif user == "erin" and res and res.get("resource") == "configmaps":
            if self.erin_failures:
                self.erin_failures -= 1
                return web.Response(status=500, text="the authorizer's database is restarting")
            status = {"allowed": True}
        elif user == "bob":
            status = {"allowed": False, "reason": "bob is unknown to the webhook"}
        return web.json_response({"apiVersion": review["apiVersion"], "kind": "SubjectAccessReview", "status": status})


def write_token_file(d: Path) -> Path:
    path = d / "tokens.csv"
    path.write_text("".join(f"{token},{user},uid-{user}\n" for user, token in TOKENS.items()))
    return path


@pytest.fixture(scope="module")
def authorizer() -> Iterator[Authorizer]:
    server = Authorizer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(authorizer: Authorizer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerProcess]:
    d = tmp_path_factory.mktemp("authz-webhook")
    config = authorizer.write_kubeconfig(d / "authz.kubeconfig", "/authorize", token=APISERVER_TOKEN)
    server = APIServerProcess(extra_args=(
        f"--token-auth-file={write_token_file(d)}", "--authorization-mode=Node,RBAC,Webhook",
        f"--authorization-webhook-config-file={config}", "--authorization-webhook-version=v1",
    )).start()  # fmt: skip
    yield server
    server.cleanup()


@pytest.fixture
def team(cluster: APIServerProcess) -> str:
    name = f"team{next(_names)}"
    cluster.create_namespace(name)
    return name


def as_user(cluster: APIServerProcess, user: str, *args: str) -> Any:
    """kubectl as `user` (a token from the token file)."""
    path = cluster.dir / f"{user}.kubeconfig"
    if not path.exists():
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        config["users"] = [{"name": user, "user": {"token": TOKENS[user]}}]
        for c in config["contexts"]:
            c["context"]["user"] = user
        path.write_text(yaml.safe_dump(config))
    return cluster.kubectl("--kubeconfig", str(path), *args)


def test_what_the_webhook_allows_succeeds_and_the_review_carries_the_request(cluster, authorizer, team):
    cluster.kubectl("create", "configmap", "settings", "-n", team, "--from-literal=a=1", check=True)
    out = as_user(cluster, "alice", "get", "configmap", "settings", "-n", team, "-o", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["data"] == {"a": "1"}
    listed = as_user(cluster, "alice", "get", "pods", "-n", team, "-l", "app=web,tier!=db,env in (a,b),!old",
                     "--field-selector", "status.phase=Running,spec.nodeName!=n1")  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    (review,) = [r for r in authorizer.about("alice") if r["spec"]["resourceAttributes"].get("resource") == "pods"]
    assert review["apiVersion"] == "authorization.k8s.io/v1" and review["kind"] == "SubjectAccessReview"
    spec = review["spec"]
    assert spec["user"] == "alice" and spec["uid"] == "uid-alice"
    assert spec["groups"] == ["system:authenticated"]
    assert spec["resourceAttributes"] == {
        "namespace": team, "verb": "list", "version": "v1", "resource": "pods",
        "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "NotIn", "values": ["n1"]},
                                           {"key": "status.phase", "operator": "In", "values": ["Running"]}]},
        "labelSelector": {"requirements": [
            {"key": "app", "operator": "In", "values": ["web"]},
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "old", "operator": "DoesNotExist"},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
        ]},
    }  # fmt: skip
    # The API server presents the kubeconfig's credentials to the webhook.
    assert authorizer.credentials == {f"Bearer {APISERVER_TOKEN}"}


def test_what_the_webhook_denies_is_forbidden_with_its_reason(cluster, authorizer, team):
    out = as_user(cluster, "mallory", "get", "configmaps", "-n", team)
    assert out.returncode != 0
    assert out.stderr.strip() == (
        f'Error from server (Forbidden): configmaps is forbidden: User "mallory" cannot list resource "configmaps" '
        f'in API group "" in the namespace "{team}": mallory is banned'
    )
    status, body = _raw(cluster, "mallory", f"/api/v1/namespaces/{team}/configmaps/x")
    assert status == 403
    assert body["reason"] == "Forbidden" and body["details"] == {"name": "x", "kind": "configmaps"}
    assert body["message"].endswith(": mallory is banned")


def test_rbac_is_asked_first_and_the_webhook_only_when_rbac_has_no_opinion(cluster, authorizer, team):
    # RBAC lets mallory read secrets in the namespace: the webhook's denial is never asked for.
    cluster.kubectl("create", "role", "secret-reader", "-n", team, "--verb=get,list", "--resource=secrets", check=True)
    cluster.kubectl("create", "rolebinding", "mallory-secrets", "-n", team, "--role=secret-reader", "--user=mallory",
                    "--user=bob", check=True)  # fmt: skip
    before = len(authorizer.about("mallory"))
    out = as_user(cluster, "mallory", "get", "secrets", "-n", team)
    assert out.returncode == 0, out.stderr
    asked = [r for r in authorizer.about("mallory")[before:] if "resourceAttributes" in r["spec"]]
    assert asked == []
    # Where RBAC has nothing to say, the webhook's no-opinion is a refusal with its reason.
    out = as_user(cluster, "bob", "get", "configmaps", "-n", team)
    assert out.returncode != 0
    assert out.stderr.strip().endswith(f'in the namespace "{team}": bob is unknown to the webhook')
    assert as_user(cluster, "bob", "get", "secrets", "-n", team).returncode == 0


def test_answers_are_cached(cluster, authorizer, team):
    path = f"/api/v1/namespaces/{team}/configmaps"
    for _ in range(3):
        assert _raw(cluster, "alice", path)[0] == 200
        assert _raw(cluster, "mallory", path)[0] == 403

    def asked(user: str) -> int:
        return sum(
            1 for r in authorizer.about(user) if r["spec"].get("resourceAttributes", {}).get("namespace") == team
        )

    assert asked("alice") == 1 and asked("mallory") == 1


def test_a_call_that_fails_with_a_500_is_tried_again(cluster, authorizer, team):
    assert _raw(cluster, "erin", f"/api/v1/namespaces/{team}/configmaps")[0] == 200
    assert len(authorizer.about("erin")) == 2 and authorizer.erin_failures == 0


def test_kubectl_auth_can_i_asks_the_webhook(cluster, authorizer, team):
    yes = as_user(cluster, "alice", "auth", "can-i", "watch", "pods", "-n", team)
    assert yes.stdout.strip() == "yes"
    no = as_user(cluster, "alice", "auth", "can-i", "delete", "pods", "-n", team)
    assert no.stdout.strip() == "no"


def test_a_webhook_that_is_down_leaves_the_decision_to_the_next_authorizer(authorizer, tmp_path):
    """Webhook first, then RBAC, and the webhook's port closed: RBAC still allows what it allows; what no
    authorizer allows fails with the webhook's error, as upstream's authorization filter answers (500)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    config = authorizer.write_kubeconfig(tmp_path / "authz.kubeconfig", "/authorize", port=closed)
    server = APIServerProcess(extra_args=(
        f"--token-auth-file={write_token_file(tmp_path)}", "--authorization-mode=Webhook,RBAC",
        f"--authorization-webhook-config-file={config}",
    )).start()  # fmt: skip
    try:
        server.create_namespace("down")
        server.kubectl("create", "role", "reader", "-n", "down", "--verb=list", "--resource=configmaps", check=True)
        server.kubectl("create", "rolebinding", "bob-reads", "-n", "down", "--role=reader", "--user=bob", check=True)
        assert as_user(server, "bob", "get", "configmaps", "-n", "down").returncode == 0
        status, body = _raw(server, "alice", "/api/v1/namespaces/down/configmaps")
        assert status == 500
        refused = f"dial tcp 127.0.0.1:{closed}: connect: connection refused"
        assert f'Post "https://127.0.0.1:{closed}/authorize?timeout=30s": {refused}' in body["message"]
    finally:
        server.cleanup()


def _raw(cluster: APIServerProcess, user: str, path: str) -> tuple[int, Any]:
    status, _, body = cluster.raw_request("GET", path, headers={"Authorization": f"Bearer {TOKENS[user]}"})
    return status, json.loads(body)


# -- units -------------------------------------------------------------------------------------------------------


def test_the_review_spec_for_each_version():
    user = UserInfo("jane", "u1", ("devs", "system:authenticated"), {"scopes": ("b", "a"), "aaa": ("x",)})
    a = Attributes(user, "list", True, "ns", "apps", "v1", "deployments", "", "",
                   field_selector=parse_field_selector("metadata.namespace==ns").requirements,
                   label_selector=parse_label_selector("x>1,y").requirements)  # fmt: skip
    v1 = review_spec(a, "v1")
    assert list(v1) == ["resourceAttributes", "user", "groups", "extra", "uid"]
    assert v1["resourceAttributes"] == {
        "namespace": "ns", "verb": "list", "group": "apps", "version": "v1", "resource": "deployments",
        "fieldSelector": {"requirements": [{"key": "metadata.namespace", "operator": "In", "values": ["ns"]}]},
        "labelSelector": {"requirements": [{"key": "y", "operator": "Exists"}]},  # `>` is left out
    }  # fmt: skip
    assert list(v1["extra"]) == ["aaa", "scopes"] and v1["extra"]["scopes"] == ["b", "a"]
    v1beta1 = review_spec(a, "v1beta1")
    assert v1beta1["group"] == ["devs", "system:authenticated"] and "groups" not in v1beta1
    assert review_spec(Attributes(UserInfo("system:anonymous"), "get", path="/healthz"), "v1") == {
        "nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "system:anonymous"}  # fmt: skip


@pytest.mark.parametrize(
    ("status", "decision", "reason", "error"),
    [
        ({"allowed": True, "reason": "ok"}, ALLOW, "ok", ""),
        ({"allowed": False, "denied": True, "reason": "no"}, DENY, "no", ""),
        ({"allowed": False, "reason": "dunno"}, NO_OPINION, "dunno", ""),
        ({}, NO_OPINION, "", ""),
        ({"allowed": True, "denied": True}, DENY, "", BOTH_ERROR),
    ],
)
def test_the_decision_an_answer_makes(status, decision, reason, error):
    d = decision_of(status)
    assert (d.decision, d.reason, d.error) == (decision, reason, error)
