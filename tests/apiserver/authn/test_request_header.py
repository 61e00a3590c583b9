"""The front proxy's authenticator: a client with a certificate from the request-header CA and an allowed CN
speaks for the user its X-Remote-* headers name; anyone else's such headers count for nothing, and the proxy's
certificate is no user of its own."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyk8s.apiserver.certs import _issue, _key_pem, _load_key
from pyk8s.testing.cluster import APIServerProcess

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def issue(cluster: APIServerProcess, ca: str, cn: str) -> tuple[Path, Path]:
    """A client certificate with CN `cn` signed by the PKI's `ca` ("ca" or "front-proxy-ca")."""
    pki = cluster.data_dir / "pki"
    ca_cert = x509.load_pem_x509_certificate((pki / f"{ca}.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _issue(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]), key, ca_cert.subject,
                  _load_key(pki / f"{ca}.key"), usage=[ExtendedKeyUsageOID.CLIENT_AUTH])  # fmt: skip
    cert_path, key_path = cluster.dir / f"{ca}-{cn}.crt", cluster.dir / f"{ca}-{cn}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_key_pem(key))
    return cert_path, key_path


def review(cluster: APIServerProcess, cert: tuple[Path, Path], headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(
        cluster.url + REVIEW, data=json.dumps(BODY).encode(), method="POST",
        headers={"Content-Type": "application/json", **headers},
    )  # fmt: skip
    ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
    ctx.load_cert_chain(*cert)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_front_proxy_speaks_for_the_user_it_names(cluster):
    proxy = issue(cluster, "front-proxy-ca", "front-proxy-client")
    status, body = review(cluster, proxy, {
        "X-Remote-User": "alice", "X-Remote-Group": "devs", "X-Remote-Extra-Scopes": "read",
        "X-Remote-Extra-Acme.com%2Fproject": "x",
    })  # fmt: skip
    assert status == 201, body
    info = body["status"]["userInfo"]
    assert info["username"] == "alice"
    assert info["groups"] == ["devs", "system:authenticated"]
    assert info["extra"] == {"scopes": ["read"], "acme.com/project": ["x"]}


def test_a_proxy_certificate_names_nobody_of_its_own(cluster):
    proxy = issue(cluster, "front-proxy-ca", "front-proxy-client")
    status, body = review(cluster, proxy, {})
    assert status == 201, body
    assert body["status"]["userInfo"]["username"] == "system:anonymous"


def test_a_proxy_with_a_cn_not_allowed_is_refused(cluster):
    other = issue(cluster, "front-proxy-ca", "someone-else")
    status, body = review(cluster, other, {"X-Remote-User": "alice"})
    assert status == 401, body
    assert body["reason"] == "Unauthorized"


def test_anyone_elses_headers_count_for_nothing(cluster):
    user = issue(cluster, "ca", "bob")
    status, body = review(cluster, user, {"X-Remote-User": "mallory", "X-Remote-Group": "system:masters"})
    assert status == 201, body
    info = body["status"]["userInfo"]
    assert info["username"] == "bob"
    assert "system:masters" not in info["groups"]
