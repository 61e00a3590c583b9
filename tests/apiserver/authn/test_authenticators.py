"""The authenticators on their own (no server): the chain's fail-on-error rule, service-account user names,
the token file's CSV, bootstrap token Secrets, and signing and verifying tokens with RSA and ECDSA keys."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.apiserver.authn import ANONYMOUS_USER, InvalidCredentials, Union, UserInfo
from pyk8s.apiserver.authn.bearertoken import AudienceAgnostic, BearerTokenAuthenticator, CachedTokenAuthenticator
from pyk8s.apiserver.authn.bootstrap import BootstrapTokenAuthenticator
from pyk8s.apiserver.authn.claims import BoundTokenValidator, claims
from pyk8s.apiserver.authn.jwt import JWTTokenAuthenticator, JWTTokenGenerator, StaticPublicKeys, jwk, key_id
from pyk8s.apiserver.authn.serviceaccount import InvalidUsername, make_username, split_username
from pyk8s.apiserver.authn.token_file import TokenAuthenticator, TokenFileError

ISSUER = "https://issuer.example"


class Request:
    def __init__(self, authorization: str = "") -> None:
        self.headers = {"Authorization": authorization} if authorization else {}

    def peer_certificate(self) -> None:
        return None


class Refuses:
    def authenticate(self, request: Any) -> UserInfo | None:
        raise InvalidCredentials("bad credentials")


class Accepts:
    def authenticate(self, request: Any) -> UserInfo | None:
        return UserInfo("bob", groups=("g",))


class Ignores:
    def authenticate(self, request: Any) -> UserInfo | None:
        return None


def test_the_chain_adds_the_authenticated_group_and_falls_back_to_anonymous_only_when_nothing_failed():
    assert Union([Ignores(), Accepts()]).authenticate(Request()) == UserInfo(
        "bob", groups=("g", "system:authenticated")
    )
    assert Union([Ignores()]).authenticate(Request()) == ANONYMOUS_USER
    assert Union([Ignores()], anonymous=False).authenticate(Request()) is None
    # an authenticator that rejected the credentials: 401, not anonymous; a later success still wins
    with pytest.raises(InvalidCredentials, match="bad credentials"):
        Union([Refuses(), Ignores()]).authenticate(Request())
    assert Union([Refuses(), Accepts()]).authenticate(Request()).name == "bob"  # type: ignore[union-attr]
    with pytest.raises(InvalidCredentials, match=r"^bad credentials$"):  # repeated messages are one
        Union([Refuses(), Refuses()]).authenticate(Request())


def test_bearer_headers_as_upstream_reads_them():
    bearer = BearerTokenAuthenticator(TokenAuthenticator({"t": UserInfo("u")}))
    assert bearer.authenticate(Request("Bearer t")) == UserInfo("u")
    assert bearer.authenticate(Request("bearer t")) == UserInfo("u")
    assert bearer.authenticate(Request("Basic dTpw")) is None  # another scheme: not ours
    assert bearer.authenticate(Request("Bearer  t")) is None  # a space too many: no token
    with pytest.raises(InvalidCredentials, match=r"^invalid bearer token$"):
        bearer.authenticate(Request("Bearer other"))


def test_static_tokens_are_for_the_api_audiences_only_and_success_is_cached():
    calls = []

    class Counting(TokenAuthenticator):
        def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Any:
            calls.append(token)
            return super().authenticate_token(token, audiences)

    agnostic = AudienceAgnostic(Counting({"t": UserInfo("u")}), ("api",))
    assert agnostic.authenticate_token("t", ("other",)) is None
    resp = agnostic.authenticate_token("t", ("api", "other"))
    assert resp is not None and resp.audiences == ("api",)
    cached = CachedTokenAuthenticator(agnostic, ttl=60)
    calls.clear()
    for _ in range(3):
        assert cached.authenticate_token("t", ("api",)) is not None
    assert cached.authenticate_token("nope", ("api",)) is None
    assert cached.authenticate_token("nope", ("api",)) is None  # failures are not cached
    assert calls == ["t", "nope", "nope"]


@given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True),
       st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?", fullmatch=True))  # fmt: skip
def test_split_username_undoes_make_username(namespace: str, name: str):
    if ".." in name or ".-" in name or "-." in name:
        return
    assert split_username(make_username(namespace, name)) == (namespace, name)


@pytest.mark.parametrize("username", [
    "system:serviceaccount:ns", "system:serviceaccount:ns:a:b", "system:serviceaccount::name",
    "system:serviceaccount:Upper:name", "system:serviceaccount:ns:Bad_Name", "system:serviceaccounts:ns:name", "bob",
])  # fmt: skip
def test_split_username_refuses_what_is_not_a_service_account(username: str):
    with pytest.raises(InvalidUsername, match="Username must be in the form system:serviceaccount:namespace:name"):
        split_username(username)


def test_token_file(tmp_path):
    path = tmp_path / "tokens.csv"
    path.write_text('t1,alice,1\n\nt2,bob,2,"a,b"\n,nobody,3\nt1,carol,4\n')
    tokens = TokenAuthenticator.from_csv(path).tokens
    assert tokens == {"t1": UserInfo("carol", "4"), "t2": UserInfo("bob", "2", ("a", "b"))}  # the last of a duplicate
    path.write_text("t1,alice\n")
    with pytest.raises(TokenFileError) as err:
        TokenAuthenticator.from_csv(path)
    assert str(err.value) == f"token file '{path}' must have at least 3 columns (token, user name, user uid), found 2"


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def test_bootstrap_tokens_match_their_secret_in_every_way_or_are_not_recognised():
    data = {"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
            "auth-extra-groups": "system:bootstrappers:b,system:bootstrappers:a"}  # fmt: skip
    secrets: dict[str, Any] = {"bootstrap-token-abcdef": {"metadata": {"name": "bootstrap-token-abcdef"},
                               "type": "bootstrap.kubernetes.io/token", "data": {k: b64(v) for k, v in data.items()}}}  # fmt: skip
    auth = BootstrapTokenAuthenticator(secrets.get)
    resp = auth.authenticate_token("abcdef.0123456789abcdef", ())
    assert resp is not None
    assert resp.user == UserInfo("system:bootstrap:abcdef",
                                 groups=("system:bootstrappers", "system:bootstrappers:a", "system:bootstrappers:b"))  # fmt: skip
    for token in ("abcdef.0123456789abcdeX", "abcdef.1123456789abcdef", "ABCDEF.0123456789abcdef", "abcdef"):
        assert auth.authenticate_token(token, ()) is None
    secret = secrets["bootstrap-token-abcdef"]
    for key, value in (("usage-bootstrap-authentication", "false"), ("expiration", "2000-01-01T00:00:00Z"),
                       ("expiration", "yesterday"), ("auth-extra-groups", "system:masters")):  # fmt: skip
        old = secret["data"].get(key)
        secret["data"][key] = b64(value)
        assert auth.authenticate_token("abcdef.0123456789abcdef", ()) is None, key
        secret["data"][key] = old


class Objects:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}

    def service_account(self, namespace: str, name: str) -> Any:
        return self.objs.get(("ServiceAccount", namespace, name))

    def secret(self, namespace: str, name: str) -> Any:
        return self.objs.get(("Secret", namespace, name))

    def pod(self, namespace: str, name: str) -> Any:
        return self.objs.get(("Pod", namespace, name))

    def node(self, name: str) -> Any:
        return self.objs.get(("Node", "", name))


SA = {"kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "ns", "uid": "sa-uid"}}
NODE = {"kind": "Node", "metadata": {"name": "n1", "uid": "node-uid"}}


@pytest.mark.parametrize("key", [rsa.generate_private_key(public_exponent=65537, key_size=2048),
                                 ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP384R1()),
                                 ec.generate_private_key(ec.SECP521R1())], ids=["RS256", "ES256", "ES384", "ES512"])  # fmt: skip
def test_tokens_signed_with_each_key_type_verify_and_name_their_node(key: Any):
    keys = StaticPublicKeys([key.public_key()])
    objects = Objects(SA, NODE)
    auth = JWTTokenAuthenticator([ISSUER], keys, (ISSUER,), BoundTokenValidator(objects))
    registered, private = claims(SA, None, None, NODE, 3600, 0, [ISSUER])
    token = JWTTokenGenerator(ISSUER, key).generate_token(registered, private)
    resp = auth.authenticate_token(token, (ISSUER,))
    assert resp is not None and resp.audiences == (ISSUER,)
    assert resp.user.name == "system:serviceaccount:ns:sa" and resp.user.uid == "sa-uid"
    assert resp.user.extra["authentication.kubernetes.io/node-name"] == ("n1",)
    assert resp.user.extra["authentication.kubernetes.io/node-uid"] == ("node-uid",)
    assert jwk(key.public_key())["kid"] == key_id(key.public_key())
    # a flipped signature byte, and the node gone
    head, body, sig = token.split(".")
    forged = f"{head}.{body}.{sig[:-4]}{'AAAA' if sig[-4:] != 'AAAA' else 'BBBB'}"
    with pytest.raises(InvalidCredentials, match="square/go-jose: error in cryptographic primitive"):
        auth.authenticate_token(forged, (ISSUER,))
    del objects.objs[("Node", "", "n1")]
    with pytest.raises(InvalidCredentials, match=r"^service account token has been invalidated$"):
        auth.authenticate_token(token, (ISSUER,))


def test_time_claims_allow_a_minute_of_skew():
    key = ec.generate_private_key(ec.SECP256R1())
    auth = JWTTokenAuthenticator([ISSUER], StaticPublicKeys([key.public_key()]), (ISSUER,),
                                 BoundTokenValidator(Objects(SA)))  # fmt: skip
    signer = JWTTokenGenerator(ISSUER, key)
    now = time.time()
    for issued, message in ((now - 600 - 30, None), (now - 600 - 90, "service account token has expired"),
                            (now + 30, None), (now + 90, "service account token is not valid yet")):  # fmt: skip
        token = signer.generate_token(*claims(SA, None, None, None, 600, 0, [ISSUER], now=issued))
        if message is None:
            assert auth.authenticate_token(token, (ISSUER,)) is not None
        else:
            with pytest.raises(InvalidCredentials, match=rf"^{message}$"):
                auth.authenticate_token(token, (ISSUER,))
