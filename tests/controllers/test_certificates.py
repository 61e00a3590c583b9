"""The CertificateSigningRequest controllers in a real `pyk8s controller-manager` process, each controller as its
own service account under RBAC (--use-service-account-credentials), against an API server that accepts bootstrap
tokens: a node joins with a bootstrap token and gets a client certificate that authenticates it as
system:node:<name>, renews it itself, an API client certificate approved with kubectl lasts what was asked,
denied or disallowed requests get none; and the cleaner, driven by its clock, removes the old requests."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pyk8s.client.cache import SharedInformerFactory
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.certificates import CSRCleanerController
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess
from pyk8s.testing.polling import wait_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
API_CLIENT = "kubernetes.io/kube-apiserver-client"
RBAC = "rbac.authorization.k8s.io"
TOKEN_GROUP = "system:bootstrappers:test"


class Cluster(APIServerProcess):
    """The API server, and the controller manager whose log a failed wait shows."""

    manager: ComponentProcess


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    server = Cluster(extra_args=("--enable-bootstrap-token-auth",))
    server.start()
    pki = server.data_dir / "pki"
    manager = ComponentProcess(
        "controller-manager", server.kubeconfig, "--no-leader-elect", "--use-service-account-credentials=true",
        "--controllers=csrapproving,csrsigning,csrcleaner", f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}", "--cluster-signing-duration=2h", log_dir=server.dir,
    )  # fmt: skip
    try:
        server.manager = manager.start()
        yield server
        # Every sync ended in a result or an expected error: nothing went unhandled.
        log = manager.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]
    finally:
        manager.stop()
        server.cleanup()


def key_and_request(cn: str, orgs: tuple[str, ...] = ()) -> tuple[ec.EllipticCurvePrivateKey, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(x509.NameOID.COMMON_NAME, cn)]
    attrs += [x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, o) for o in orgs]
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    return key, base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def csr(name: str, request: str, signer: str, usages: tuple[str, ...], labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"request": request, "signerName": signer, "usages": list(usages), **spec}}  # fmt: skip


def kubeconfig(cluster: APIServerProcess, name: str, user: dict[str, str]) -> Path:
    path = cluster.dir / f"{name}.kubeconfig"
    ca = base64.b64encode(cluster.ca_file.read_bytes()).decode()
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": cluster.url, "certificate-authority-data": ca}}],
        "users": [{"name": "u", "user": user}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    return path


def cert_kubeconfig(cluster: APIServerProcess, name: str, key: ec.EllipticCurvePrivateKey, cert_pem: bytes) -> Path:
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    return kubeconfig(cluster, name, {"client-certificate-data": base64.b64encode(cert_pem).decode(),
                                      "client-key-data": base64.b64encode(key_pem).decode()})  # fmt: skip


def kubectl_as(cluster: APIServerProcess, config: Path, *args: str, input: str | None = None) -> Any:
    return cluster.kubectl("--kubeconfig", str(config), *args, input=input)


def whoami(cluster: APIServerProcess, config: Path) -> dict[str, Any]:
    res = kubectl_as(cluster, config, "auth", "whoami", "-o", "json")
    assert res.returncode == 0, res.stderr
    info: dict[str, Any] = json.loads(res.stdout)["status"]["userInfo"]
    return info


def get(cluster: APIServerProcess, name: str) -> dict[str, Any]:
    status, body = cluster.request("GET", f"{CSRS}/{name}")
    assert status == 200, body
    return body  # type: ignore[return-value]


def issued(cluster: Cluster, name: str) -> x509.Certificate:
    """The certificate once the signer has written it."""

    def certificate() -> bytes | None:
        value = (get(cluster, name).get("status") or {}).get("certificate")
        return base64.b64decode(value) if value else None

    pem = wait_for(f"the certificate of {name}", certificate, logs=cluster.manager.log_tail)
    return x509.load_pem_x509_certificate(pem)


def conditions(cluster: APIServerProcess, name: str) -> list[dict[str, Any]]:
    return list((get(cluster, name).get("status") or {}).get("conditions") or [])


def binding(name: str, role: str, group: str) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": group}]}  # fmt: skip


def bootstrap_token(cluster: APIServerProcess) -> str:
    """A bootstrap token in group system:bootstrappers:test, which may ask for node client certificates and have
    them approved (kubeadm's bindings)."""
    token_id, secret = secrets.token_hex(3), secrets.token_hex(8)
    data = {"token-id": token_id, "token-secret": secret, "usage-bootstrap-authentication": "true",
            "auth-extra-groups": TOKEN_GROUP}  # fmt: skip
    cluster.apply(
          {"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
           "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
           "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}},
          binding("test:kubelet-bootstrap", "system:node-bootstrapper", TOKEN_GROUP),
          binding("test:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                  TOKEN_GROUP),
          binding("test:node-autoapprove-certificate-rotation",
                  "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"))  # fmt: skip
    return f"{token_id}.{secret}"


def test_a_node_joins_with_a_bootstrap_token_and_renews_its_certificate(cluster: Cluster) -> None:
    token = kubeconfig(cluster, "bootstrap", {"token": bootstrap_token(cluster)})
    key, request = key_and_request("system:node:node-a", ("system:nodes",))
    body = json.dumps(csr("node-csr-a", request, KUBELET_CLIENT, ("digital signature", "client auth")))
    res = wait_for("the bootstrap token's RBAC", lambda: (r := kubectl_as(cluster, token, "create", "-f", "-",
                                                                          input=body)).returncode == 0 and r)  # fmt: skip
    assert res.stdout.strip() == "certificatesigningrequest.certificates.k8s.io/node-csr-a created"
    cert = issued(cluster, "node-csr-a")
    (approved,) = conditions(cluster, "node-csr-a")
    assert (approved["type"], approved["reason"], approved["message"]) == (
        "Approved", "AutoApproved", "Auto approving kubelet client certificate after SubjectAccessReview.")  # fmt: skip
    assert get(cluster, "node-csr-a")["spec"]["username"].startswith("system:bootstrap:")
    assert cert.issuer == x509.load_pem_x509_certificate(cluster.ca_file.read_bytes()).subject
    # 2h (--cluster-signing-duration), from 5 minutes ago.
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(hours=2, minutes=5)
    # The certificate is the node's identity.
    node = cert_kubeconfig(cluster, "node-a", key, cert.public_bytes(serialization.Encoding.PEM))
    info = whoami(cluster, node)
    assert (info["username"], info["groups"]) == ("system:node:node-a", ["system:nodes", "system:authenticated"])
    # With it the node renews its own certificate (selfnodeclient).
    key2, request2 = key_and_request("system:node:node-a", ("system:nodes",))
    renewal = json.dumps(csr("node-csr-a2", request2, KUBELET_CLIENT, ("digital signature", "key encipherment",
                                                                          "client auth")))  # fmt: skip
    wait_for("the node's RBAC", lambda: kubectl_as(cluster, node, "create", "-f", "-", input=renewal).returncode == 0)
    cert2 = issued(cluster, "node-csr-a2")
    assert conditions(cluster, "node-csr-a2")[0]["message"] == (
        "Auto approving self kubelet client certificate after SubjectAccessReview."
    )
    renewed = cert_kubeconfig(cluster, "node-a2", key2, cert2.public_bytes(serialization.Encoding.PEM))
    assert whoami(cluster, renewed)["username"] == "system:node:node-a"


def test_who_may_not_ask_for_node_certificates_waits_for_a_person(cluster: Cluster) -> None:
    # jane may create requests (she is a node bootstrapper) but not have node certificates approved.
    cluster.apply({**binding("test:jane-bootstrapper", "system:node-bootstrapper", "x"),
                    "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "jane"}]})  # fmt: skip
    _, request = key_and_request("system:node:node-j", ("system:nodes",))
    body = json.dumps(csr("node-csr-j", request, KUBELET_CLIENT, ("digital signature", "client auth")))
    wait_for("jane's RBAC", lambda: cluster.kubectl("create", "-f", "-", "--as", "jane", input=body).returncode == 0)
    # A request that is not a node's (usages) is not the approver's either, even from a bootstrap token.
    _, request = key_and_request("system:node:node-x", ("system:nodes",))
    _, body = cluster.request("POST", CSRS, csr("node-csr-x", request, KUBELET_CLIENT, ("client auth", "server auth")))
    # Meanwhile an approved request of the same signer is signed: the approver has been through both by then.
    _, request = key_and_request("system:node:node-k", ("system:nodes",))
    cluster.request("POST", CSRS, csr("node-csr-k", request, KUBELET_CLIENT, ("digital signature", "client auth")))
    cluster.kubectl("certificate", "approve", "node-csr-k", check=True)
    issued(cluster, "node-csr-k")
    assert conditions(cluster, "node-csr-j") == [] and conditions(cluster, "node-csr-x") == []
    # Approved by a person, the one with bad usages fails at the signer.
    cluster.kubectl("certificate", "approve", "node-csr-x", check=True)
    wait_for("the signer's refusal", lambda: len(conditions(cluster, "node-csr-x")) == 2)
    failed = conditions(cluster, "node-csr-x")[1]
    assert (failed["type"], failed["status"], failed["reason"], failed["message"]) == (
        "Failed", "True", "SignerValidationFailure",
        "usages did not match [client auth digital signature key encipherment]")  # fmt: skip
    assert "certificate" not in get(cluster, "node-csr-x")["status"]


def test_an_api_client_certificate_lasts_what_was_asked(cluster: Cluster) -> None:
    key, request = key_and_request("alice", ("devs",))
    cluster.request("POST", CSRS, csr("alice", request, API_CLIENT, ("client auth",), expirationSeconds=3600))
    _, request_long = key_and_request("bob")
    cluster.request("POST", CSRS, csr("bob", request_long, API_CLIENT, ("client auth", "digital signature"),
                                      expirationSeconds=86400))  # fmt: skip
    _, request_denied = key_and_request("mallory")
    cluster.request("POST", CSRS, csr("mallory", request_denied, API_CLIENT, ("client auth",)))
    _, request_server = key_and_request("carol")
    cluster.request("POST", CSRS, csr("carol", request_server, API_CLIENT, ("client auth", "server auth")))
    cluster.kubectl("certificate", "deny", "mallory", check=True)
    cluster.kubectl("certificate", "approve", "alice", "bob", "carol", check=True)
    cert = issued(cluster, "alice")
    # An hour as asked (short-lived: not backdated at its end), from 5 minutes ago.
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(seconds=3600 + 300)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    alice = cert_kubeconfig(cluster, "alice", key, cert.public_bytes(serialization.Encoding.PEM))
    info = whoami(cluster, alice)
    assert (info["username"], info["groups"]) == ("alice", ["devs", "system:authenticated"])
    # A day asked, two hours given (--cluster-signing-duration).
    long = issued(cluster, "bob")
    assert long.not_valid_after_utc - long.not_valid_before_utc == dt.timedelta(hours=2, minutes=5)
    wait_for("the signer's refusal", lambda: len(conditions(cluster, "carol")) == 2)
    assert conditions(cluster, "carol")[1]["message"] == "invalid usage for client certificate: server auth"
    # Denied: never signed.
    assert [c["type"] for c in conditions(cluster, "mallory")] == ["Denied"]
    assert "certificate" not in get(cluster, "mallory")["status"]


def test_the_cleaner_removes_old_requests(cluster: Cluster) -> None:
    labels = {"test": "cleaner"}
    for name, usages, extra in (("c-pending", ("client auth",), {}), ("c-denied", ("client auth",), {}),
                                ("c-issued", ("client auth",), {}), ("c-failed", ("server auth",), {}),
                                ("c-short", ("client auth",), {"expirationSeconds": 600}),
                                ("c-unsigned", ("client auth",), {})):  # fmt: skip
        signer = "example.com/nobody" if name == "c-unsigned" else API_CLIENT
        _, request = key_and_request(name)
        status, body = cluster.request("POST", CSRS, csr(name, request, signer, usages, labels, **extra))
        assert status == 201, body
    cluster.kubectl("certificate", "deny", "c-denied", check=True)
    cluster.kubectl("certificate", "approve", "c-issued", "c-failed", "c-short", "c-unsigned", check=True)
    issued(cluster, "c-issued")
    issued(cluster, "c-short")
    wait_for("the signer's refusal", lambda: len(conditions(cluster, "c-failed")) == 2)

    def remaining(after: dt.timedelta) -> list[str]:
        async def one_pass() -> list[str]:
            config = load_kubeconfig(str(cluster.kubeconfig)).with_options(qps=-1)
            async with RESTClient(config) as client:
                factory = SharedInformerFactory(client, label_selector="test=cleaner")
                cleaner = CSRCleanerController(client, factory, clock=lambda: dt.datetime.now(dt.UTC) + after)
                factory.start()
                try:
                    await cleaner.csrs.wait_for_sync()
                    await cleaner.clean()
                finally:
                    await factory.shutdown()
                listed = await client.list("certificatesigningrequests", label_selector="test=cleaner")
                return sorted(o["metadata"]["name"] for o in listed["items"])

        return asyncio.run(one_pass())

    assert remaining(dt.timedelta(minutes=5)) == ["c-denied", "c-failed", "c-issued", "c-pending", "c-short",
                                                  "c-unsigned"]  # fmt: skip
    # Past its 10 minutes the short certificate has expired; an hour on, denied, failed and issued requests are
    # done with; a day on, pending ones too. Approved but never signed: kept.
    assert remaining(dt.timedelta(minutes=30)) == ["c-denied", "c-failed", "c-issued", "c-pending", "c-unsigned"]
    assert remaining(dt.timedelta(hours=2)) == ["c-pending", "c-unsigned"]
    assert remaining(dt.timedelta(hours=25)) == ["c-unsigned"]


def test_the_signing_flags_are_upstreams(cluster: Cluster) -> None:
    """Default and per-signer CA files together are refused at start, as kube-controller-manager refuses them;
    a CA whose key is not its own, too."""
    from click.testing import CliRunner

    from pyk8s.cli import main

    pki = cluster.data_dir / "pki"
    base = ["controller-manager", "--kubeconfig", str(cluster.kubeconfig), "--no-leader-elect", "--secure-port=-1",
            "--controllers=csrsigning"]  # fmt: skip
    both = CliRunner().invoke(main, [*base, f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                                     f"--cluster-signing-key-file={pki / 'ca.key'}",
                                     f"--cluster-signing-kubelet-client-cert-file={pki / 'ca.crt'}"])  # fmt: skip
    assert both.exit_code == 1
    assert "Error: cannot specify default and per controller certs at the same time" in both.output
    wrong_key = CliRunner().invoke(main, [*base, f"--cluster-signing-kube-apiserver-client-cert-file={pki / 'ca.crt'}",
                                          f"--cluster-signing-kube-apiserver-client-key-file={pki / 'sa.key'}"])  # fmt: skip
    assert wrong_key.exit_code == 1
    assert ("Error: failed to start kubernetes.io/kube-apiserver-client certificate controller: tls: private key "
            "does not match public key") in wrong_key.output  # fmt: skip
