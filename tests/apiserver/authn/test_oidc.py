"""The OIDC token authenticator (`--oidc-*`) through a real API server and kubectl, with a fake identity provider:
an HTTPS server on 127.0.0.1 serving the discovery document and its keys. Tokens it signs authenticate (with
the username and group prefixes), ones for another audience, expired, wrongly signed or missing a required
claim are 401 with upstream's error, a key the server has not seen yet is fetched, service-account tokens
still work beside it, and a provider that cannot be discovered leaves its tokens refused until it can."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from pyk8s.apiserver.authn.jwt import JWTTokenGenerator, jwk
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.webhook_server import tls_server_context

from .conftest import request_as, token_kubeconfig, token_review

CLIENT_ID = "kubectl"


class IdentityProvider:
    """The fake provider: GET /.well-known/openid-configuration and GET /keys, from a thread of its own."""

    def __init__(self) -> None:
        self.ctx, self.ca = tls_server_context(("127.0.0.1",))
        self.keys: list[rsa.RSAPrivateKey] = [rsa.generate_private_key(public_exponent=65537, key_size=2048)]
        self.advertised_issuer: str | None = None  # None: its own URL
        self.key_fetches = 0
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="oidc-provider")
        self._runner: web.AppRunner | None = None

    @property
    def issuer(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def token(self, key: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        base = {"sub": "alice", "aud": CLIENT_ID, "iat": now, "exp": now + 600, "hd": "example.com",
                "groups": ["devs", "ops"], "jti": "token-1"}  # fmt: skip
        base.update(claims)
        payload = {k: v for k, v in base.items() if v is not None}
        return JWTTokenGenerator(self.issuer, key or self.keys[0]).generate_token({}, payload)

    async def discovery(self, _: web.Request) -> web.Response:
        issuer = self.issuer if self.advertised_issuer is None else self.advertised_issuer
        return web.json_response({"issuer": issuer, "jwks_uri": f"{self.issuer}/keys",
                                  "id_token_signing_alg_values_supported": ["RS256"]})  # fmt: skip

    async def jwks(self, _: web.Request) -> web.Response:
        self.key_fetches += 1
        return web.json_response({"keys": [jwk(k.public_key()) for k in self.keys]})

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/keys", self.jwks)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        self.loop.run_until_complete(self._runner.setup())
        self.loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ctx).start())
        self.port = self._runner.addresses[0][1]
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> IdentityProvider:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        async def shut_down() -> None:
            assert self._runner is not None
            await self._runner.cleanup()
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(shut_down(), self.loop)
        self._thread.join(5)


def start_server(idp: IdentityProvider, d: Path, *args: str, env: dict[str, str] | None = None) -> APIServerProcess:
    ca = d / "oidc-ca.crt"
    ca.write_bytes(idp.ca)
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        return APIServerProcess(extra_args=(
            f"--oidc-issuer-url={idp.issuer}", f"--oidc-client-id={CLIENT_ID}", f"--oidc-ca-file={ca}", *args,
        )).start()  # fmt: skip
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wait_for_discovery(cluster: APIServerProcess, token: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if token_review(cluster, token).get("authenticated"):
            return
        time.sleep(0.2)
    raise AssertionError(f"the OIDC token never authenticated: {token_review(cluster, token)}")


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    server = IdentityProvider().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(idp: IdentityProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerProcess]:
    server = start_server(idp, tmp_path_factory.mktemp("oidc"), "--oidc-groups-claim=groups",
                          "--oidc-groups-prefix=oidc:", "--oidc-required-claim=hd=example.com")  # fmt: skip
    try:
        wait_for_discovery(server, idp.token())
        yield server
    finally:
        server.cleanup()


def whoami(cluster: APIServerProcess, token: str) -> Any:
    return cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, token)), "auth", "whoami", "-o", "json")


def test_a_provider_token_authenticates_with_the_prefixes(cluster, idp):
    out = whoami(cluster, idp.token())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"]["userInfo"] == {
        "username": f"{idp.issuer}#alice",  # no --oidc-username-prefix: the issuer's, as upstream
        "groups": ["oidc:devs", "oidc:ops", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI=token-1"]},
    }
    single = idp.token(groups="admins", aud=["someone-else", CLIENT_ID], sub="bob")
    info = json.loads(whoami(cluster, single).stdout)["status"]["userInfo"]
    assert info["username"] == f"{idp.issuer}#bob" and info["groups"] == ["oidc:admins", "system:authenticated"]


@pytest.mark.parametrize(
    ("token_of", "error"),
    [
        (lambda idp: idp.token(aud="another-client"),
         'oidc: verify token: oidc: expected audience "kubectl" got ["another-client"]'),
        (lambda idp: idp.token(exp=1_600_000_000),
         "oidc: verify token: oidc: token is expired (Token Expiry: 2020-09-13 12:26:40 +0000 UTC)"),
        (lambda idp: idp.token().rsplit(".", 1)[0] + "." + idp.token(sub="mallory").rsplit(".", 1)[1],
         "oidc: verify token: failed to verify signature: failed to verify id token signature"),
        (lambda idp: idp.token(hd=None), "oidc: required claim hd not present in ID token"),
        (lambda idp: idp.token(hd="evil.example"),
         "oidc: required claim hd value does not match. Got = evil.example, want = example.com"),
        (lambda idp: idp.token(groups=7), 'oidc: parse groups claim "groups": json: cannot unmarshal number into Go '
                                          "value of type string"),
    ],
    ids=["other-audience", "expired", "wrong-signature", "missing-required-claim", "wrong-required-claim",
         "bad-groups"],
)  # fmt: skip
def test_bad_tokens_of_the_issuer_are_unauthorized(cluster, idp, token_of, error):
    token = token_of(idp)
    status, body = request_as(cluster, token, path="/api")
    assert status == 401 and body["reason"] == "Unauthorized"
    assert token_review(cluster, token) == {"user": {}, "error": error}


def test_a_token_signed_by_a_key_not_seen_yet_makes_the_keys_be_fetched(cluster, idp):
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = idp.token(new_key, sub="carol")
    fetches = idp.key_fetches
    idp.keys.append(new_key)
    try:
        out = whoami(cluster, token)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["status"]["userInfo"]["username"] == f"{idp.issuer}#carol"
        assert idp.key_fetches == fetches + 1
    finally:
        idp.keys.remove(new_key)


def test_a_service_account_token_still_works_beside_it(cluster):
    assert cluster.kubectl("create", "serviceaccount", "robot", "-n", "default").returncode == 0
    made = cluster.kubectl("create", "token", "robot", "-n", "default")
    assert made.returncode == 0, made.stderr
    out = whoami(cluster, made.stdout.strip())
    assert json.loads(out.stdout)["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"


def test_tokens_are_refused_until_the_provider_is_discovered(idp, tmp_path):
    idp.advertised_issuer = "https://somewhere.else"
    server = start_server(idp, tmp_path, "--oidc-username-claim=email", "--oidc-username-prefix=-",
                          env={"PYK8S_OIDC_DISCOVERY_RETRY": "0.5"})  # fmt: skip
    try:
        token = idp.token(email="dora@example.com", email_verified=True)
        assert token_review(server, token) == {"user": {}, "error": "oidc: authenticator not initialized"}
        assert "oidc: issuer did not match the issuer returned by provider" in server.log_tail(20000)
        idp.advertised_issuer = None
        wait_for_discovery(server, token)
        assert json.loads(whoami(server, token).stdout)["status"]["userInfo"]["username"] == "dora@example.com"
        unverified = idp.token(email="eve@example.com", email_verified=False)
        assert token_review(server, unverified) == {"user": {}, "error": "oidc: email not verified"}
    finally:
        idp.advertised_issuer = None
        server.cleanup()


def test_flags_that_cannot_work_stop_the_server(tmp_path):
    cases = [
        (("--oidc-issuer-url=http://idp.example", f"--oidc-client-id={CLIENT_ID}"),
         'jwt\\[0\\].issuer.url: Invalid value: "http://idp.example": URL scheme must be https'),
        (("--oidc-issuer-url=https://idp.example",),
         "oidc-issuer-url and oidc-client-id must be specified together when any oidc-\\* flags are set"),
        (("--oidc-issuer-url=https://idp.example", "--oidc-client-id=x", "--oidc-signing-algs=HS256"),
         'oidc: unsupported signing alg: "HS256"'),
    ]  # fmt: skip
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            APIServerProcess(extra_args=args).start(timeout=20)
