"""One API server for the authentication tests: a token file, bootstrap tokens on, a 24 h token maximum, and
the token cache off (as upstream's integration tests run), so that a token stops working the moment what
backs it goes away."""

from __future__ import annotations

import base64
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyk8s.testing.cluster import APIServerProcess

STATIC_TOKEN = "static-token-for-alice"
ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerProcess]:
    token_file = tmp_path_factory.mktemp("authn") / "tokens.csv"
    token_file.write_text(f'{STATIC_TOKEN},alice,1001,"devs,ops"\n')
    old = os.environ.get("PYK8S_TOKEN_SUCCESS_CACHE_TTL")
    os.environ["PYK8S_TOKEN_SUCCESS_CACHE_TTL"] = "0"
    try:
        server = APIServerProcess(extra_args=(
            f"--token-auth-file={token_file}", "--enable-bootstrap-token-auth",
            "--service-account-max-token-expiration=24h",
            "--authorization-mode=AlwaysAllow",  # (authentication is under test here, not authorization)
        )).start()  # fmt: skip
    finally:
        if old is None:
            os.environ.pop("PYK8S_TOKEN_SUCCESS_CACHE_TTL", None)
        else:
            os.environ["PYK8S_TOKEN_SUCCESS_CACHE_TTL"] = old
    yield server
    server.cleanup()


def token_kubeconfig(cluster: APIServerProcess, token: str) -> Path:
    """A kubeconfig with the token as its only credential (an admin client certificate beside it would be
    the identity the server sees first, as upstream's)."""
    path = cluster.dir / f"token-{abs(hash(token))}.kubeconfig"
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": cluster.url,
                      "certificate-authority-data": base64.b64encode(cluster.ca_file.read_bytes()).decode()}}],
        "users": [{"name": "t", "user": {"token": token}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
    }  # fmt: skip
    path.write_text(yaml.safe_dump(config))
    return path


def whoami(cluster: APIServerProcess, token: str) -> dict[str, Any]:
    """`kubectl auth whoami -o json` as the token's user: the SelfSubjectReview's status.userInfo."""
    res = cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, token)), "auth", "whoami", "-o", "json",
                          check=True)  # fmt: skip
    info: dict[str, Any] = json.loads(res.stdout)["status"]["userInfo"]
    return info


def request_as(cluster: APIServerProcess, token: str | None, method: str = "GET", path: str = "/api/v1/namespaces",
               body: object = None, auth_header: str | None = None) -> tuple[int, Any]:  # fmt: skip
    """One request with the token (or none, or the given Authorization header): (status, decoded body)."""
    headers = {"Content-Type": "application/json"}
    if auth_header is not None:
        headers["Authorization"] = auth_header
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{cluster.url}{path}", data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def token_review(cluster: APIServerProcess, token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    status, body = cluster.request(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec},
    )
    assert status == 201, body
    assert isinstance(body, dict)
    return body["status"]  # type: ignore[no-any-return]


def payload_of(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]
