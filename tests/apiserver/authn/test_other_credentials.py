"""The other credentials (a --token-auth-file user, a bootstrap token, none at all), the OIDC discovery
documents with which others verify our tokens, the legacy token tracking ConfigMap, and discovery of the
authentication.k8s.io kinds."""

from __future__ import annotations

import base64
import datetime as dt
import json
import ssl
import urllib.request

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from pyk8s.testing.cluster import APIServerProcess

from .conftest import ISSUER, STATIC_TOKEN, request_as, token_kubeconfig, token_review, whoami


def test_a_token_file_user(cluster):
    assert whoami(cluster, STATIC_TOKEN) == {"username": "alice", "uid": "1001",
                                             "groups": ["devs", "ops", "system:authenticated"]}  # fmt: skip
    assert token_review(cluster, STATIC_TOKEN)["audiences"] == [ISSUER]
    # a static token is for the API server's audiences only
    assert token_review(cluster, STATIC_TOKEN, ["vault"]) == {"user": {}, "error": "invalid bearer token"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def bootstrap_secret(token_id: str, secret: str, **extra: str) -> str:
    data = {"token-id": token_id, "token-secret": secret, "usage-bootstrap-authentication": "true", **extra}
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
                       "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
                       "data": {k: b64(v) for k, v in data.items()}})  # fmt: skip


def test_a_bootstrap_token_user(cluster):
    cluster.kubectl("apply", "-f", "-", input=bootstrap_secret(
        "abcdef", "0123456789abcdef", **{"auth-extra-groups": "system:bootstrappers:worker"}), check=True)  # fmt: skip
    assert whoami(cluster, "abcdef.0123456789abcdef") == {
        "username": "system:bootstrap:abcdef",
        "groups": ["system:bootstrappers", "system:bootstrappers:worker", "system:authenticated"],
    }
    assert request_as(cluster, "abcdef.0123456789abcdef")[0] == 200
    assert request_as(cluster, "abcdef.0000000000000000")[0] == 401  # the wrong secret
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.kubectl("apply", "-f", "-", input=bootstrap_secret("expird", "0123456789abcdef", expiration=past),
                    check=True)  # fmt: skip
    assert token_review(cluster, "expird.0123456789abcdef") == {"user": {}, "error": "invalid bearer token"}
    cluster.kubectl("apply", "-f", "-", input=bootstrap_secret("badgrp", "0123456789abcdef",
                    **{"auth-extra-groups": "system:masters"}), check=True)  # fmt: skip
    assert request_as(cluster, "badgrp.0123456789abcdef")[0] == 401


def test_without_credentials_a_request_is_anonymous_with_bad_ones_401(cluster):
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, body = request_as(cluster, None, "POST", path, review)
    assert status == 201
    assert body["status"]["userInfo"] == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    # another scheme is not a bearer token: anonymous too, as upstream
    status, body = request_as(cluster, None, "POST", path, review, auth_header="Basic YWxpY2U6cHc=")
    assert status == 201 and body["status"]["userInfo"]["username"] == "system:anonymous"
    status, body = request_as(cluster, "wrong", "POST", path, review)
    assert status == 401
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip


def test_kubectl_with_a_wrong_token_is_told_to_log_in(cluster):
    """Over HTTP/2 too, the 401 that ends an unauthenticated connection reaches kubectl before the goodbye."""
    res = cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, "wrong")), "get", "pods",
                          "--request-timeout=20s")  # fmt: skip
    assert res.returncode == 1
    assert "You must be logged in to the server" in res.stderr
    assert "GOAWAY" not in res.stderr


def get(cluster, path: str) -> tuple[int, dict[str, str], bytes]:
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    with urllib.request.urlopen(f"{cluster.url}{path}", context=ctx, timeout=10) as r:
        return r.status, dict(r.headers), r.read()


def test_the_oidc_documents_verify_the_tokens_the_server_issues(cluster):
    status, headers, body = get(cluster, "/.well-known/openid-configuration")
    assert status == 200
    assert headers["Content-Type"] == "application/json" and headers["Cache-Control"] == "public, max-age=3600"
    assert json.loads(body) == {
        "issuer": ISSUER,
        "jwks_uri": f"{cluster.url}/openid/v1/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    assert list(json.loads(body)) == ["issuer", "jwks_uri", "response_types_supported", "subject_types_supported",
                                      "id_token_signing_alg_values_supported"]  # fmt: skip
    status, headers, body = get(cluster, "/openid/v1/jwks")
    assert headers["Content-Type"] == "application/jwk-set+json" and headers["Cache-Control"] == "public, max-age=3600"
    (key,) = json.loads(body)["keys"]
    assert list(key) == ["use", "kty", "kid", "alg", "n", "e"]
    assert (key["use"], key["kty"], key["alg"], key["e"]) == ("sig", "RSA", "RS256", "AQAB")
    # a relying party checks a token with nothing but these documents
    cluster.kubectl("create", "serviceaccount", "oidc-user", check=True)
    token = cluster.kubectl("create", "token", "oidc-user", check=True).stdout.strip()
    head, payload, sig = token.split(".")

    def unb64(s: str) -> bytes:
        return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))

    assert json.loads(unb64(head))["kid"] == key["kid"]
    n, e = (int.from_bytes(unb64(key[k]), "big") for k in ("n", "e"))
    rsa.RSAPublicNumbers(e, n).public_key().verify(unb64(sig), f"{head}.{payload}".encode(), padding.PKCS1v15(),
                                                   hashes.SHA256())  # fmt: skip


def test_the_legacy_token_tracking_configmap_is_kept(cluster):
    out = cluster.kubectl("get", "configmap", "-n", "kube-system",
                          "kube-apiserver-legacy-service-account-token-tracking", "-o", "json", check=True)  # fmt: skip
    since = json.loads(out.stdout)["data"]["since"]
    assert since == dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def test_discovery_lists_the_authentication_kinds_and_the_token_subresource(cluster):
    rows = cluster.kubectl("api-resources", "--api-group", "authentication.k8s.io", check=True).stdout.splitlines()
    assert [r.split() for r in rows[1:]] == [
        ["selfsubjectreviews", "authentication.k8s.io/v1", "false", "SelfSubjectReview"],
        ["tokenreviews", "authentication.k8s.io/v1", "false", "TokenReview"],
    ]
    _, doc = cluster.request("GET", "/api/v1")
    token = next(r for r in doc["resources"] if r["name"] == "serviceaccounts/token")
    assert (token["kind"], token["group"], token["version"], token["verbs"]) == (
        "TokenRequest", "authentication.k8s.io", "v1", ["create"])  # fmt: skip


def test_with_anonymous_auth_off_a_request_without_credentials_is_401():
    with APIServerProcess(extra_args=("--anonymous-auth=false",)) as server:
        status, body = request_as(server, None, "GET", "/version")
        assert (status, body["reason"]) == (401, "Unauthorized")
        status, _ = request_as(server, server.token, "GET", "/version")  # the admin token
        assert status == 200
