"""CertificateSigningRequests through a real API server and the real kubectl: the requester recorded on create
whatever the client claims, `kubectl certificate approve` and `deny` through the approval subresource, what the
main resource, `status` and `approval` may each change, and validation errors worded as upstream's."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.polling import wait_for

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    yield proc
    proc.cleanup()


def request_pem(cn: str = "jane", orgs: tuple[str, ...] = ()) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(x509.NameOID.COMMON_NAME, cn)]
    attrs += [x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, o) for o in orgs]
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    return req.public_bytes(serialization.Encoding.PEM)


def csr(name: str, signer: str = "example.com/widgets", usages: tuple[str, ...] = ("client auth",),
        pem: bytes | None = None, **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem or request_pem()).decode(), "signerName": signer,
                     "usages": list(usages), **spec}}  # fmt: skip


def create(server: APIServerProcess, obj: dict[str, Any], **headers: str) -> dict[str, Any]:
    status, body = server.request("POST", CSRS, obj, headers=headers)
    assert status == 201, body
    return body  # type: ignore[return-value]


def get(server: APIServerProcess, name: str) -> dict[str, Any]:
    status, body = server.request("GET", f"{CSRS}/{name}")
    assert status == 200, body
    return body  # type: ignore[return-value]


def self_signed_certificate() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "w")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + dt.timedelta(hours=1))
            .sign(key, hashes.SHA256()))  # fmt: skip
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def invalid(server: APIServerProcess, obj: dict[str, Any]) -> str:
    status, body = server.request("POST", CSRS, obj)
    assert status == 422 and body["reason"] == "Invalid", body  # type: ignore[index]
    return str(body["message"])  # type: ignore[index]


def test_the_requester_is_recorded_whatever_the_client_claims(server: APIServerProcess) -> None:
    claimed = csr("claims", username="system:admin", uid="0", groups=["system:masters"], extra={"k": ["v"]})
    claimed["status"] = {"certificate": self_signed_certificate(),
                         "conditions": [{"type": "Approved", "status": "True", "reason": "Mine"}]}  # fmt: skip
    created = create(server, claimed, **{"Impersonate-User": "jane", "Impersonate-Group": "system:masters",
                                          "Impersonate-Extra-Team": "blue"})  # fmt: skip
    spec = created["spec"]
    assert (spec["username"], spec["groups"], spec["extra"]) == (
        "jane", ["system:masters", "system:authenticated"], {"team": ["blue"]})  # fmt: skip
    assert "uid" not in spec
    assert created["status"] == {}  # nobody creates an approved request, nor one with a certificate
    row = server.kubectl("get", "csr", "claims", "--no-headers", check=True).stdout.split()
    assert row[:1] + row[2:] == ["claims", "example.com/widgets", "jane", "<none>", "Pending"]  # (row[1]: its age)
    # spec.signerName is a field selector, as upstream's.
    create(server, csr("other-signer", signer="example.com/gizmos"))
    res = server.kubectl("get", "csr", "--field-selector", "spec.signerName=example.com/gizmos", "-o", "name")
    assert res.stdout.split() == ["certificatesigningrequest.certificates.k8s.io/other-signer"]


def test_kubectl_certificate_approve_and_deny(server: APIServerProcess) -> None:
    create(server, csr("to-approve"))
    create(server, csr("to-deny"))
    res = server.kubectl("certificate", "approve", "to-approve", check=True)
    assert res.stdout.strip() == "certificatesigningrequest.certificates.k8s.io/to-approve approved"
    res = server.kubectl("certificate", "deny", "to-deny", check=True)
    assert res.stdout.strip() == "certificatesigningrequest.certificates.k8s.io/to-deny denied"
    (approved,) = get(server, "to-approve")["status"]["conditions"]
    assert {k: approved[k] for k in ("type", "status", "reason", "message")} == {
        "type": "Approved", "status": "True", "reason": "KubectlApprove",
        "message": "This CSR was approved by kubectl certificate approve."}  # fmt: skip
    assert approved["lastTransitionTime"] and approved["lastUpdateTime"]
    (denied,) = get(server, "to-deny")["status"]["conditions"]
    assert (denied["type"], denied["reason"]) == ("Denied", "KubectlDeny")
    table = server.kubectl("get", "csr", "to-approve", "to-deny", "--no-headers", check=True).stdout
    assert [line.split()[-1] for line in table.splitlines()] == ["Approved", "Denied"]
    # A denied request stays denied: kubectl says so, and the API refuses both conditions at once.
    res = server.kubectl("certificate", "approve", "to-deny")
    assert res.returncode == 1 and 'certificate signing request "to-deny" is already Denied' in res.stderr
    both = get(server, "to-deny")
    both["status"]["conditions"].append({"type": "Approved", "status": "True", "reason": "Sneaky"})
    status, body = server.request("PUT", f"{CSRS}/to-deny/approval", both)
    assert (status, body["message"]) == (422, 'CertificateSigningRequest.certificates.k8s.io "to-deny" is invalid: '
                                              'status.conditions[1].type: Invalid value: "Approved": Approved and '
                                              "Denied conditions are mutually exclusive")  # fmt: skip
    # Nor does a condition go away.
    gone = get(server, "to-approve")
    gone["status"]["conditions"] = []
    status, body = server.request("PUT", f"{CSRS}/to-approve/approval", gone)
    assert (status, body["message"]) == (422, 'CertificateSigningRequest.certificates.k8s.io "to-approve" is invalid: '
                                              'status.conditions: Forbidden: updates may not remove a condition of '
                                              'type "Approved"')  # fmt: skip


def test_each_endpoint_changes_only_its_part(server: APIServerProcess) -> None:
    created = create(server, csr("parts"))
    # The main resource: metadata only.
    changed = json.loads(json.dumps(created))
    changed["metadata"]["labels"] = {"team": "blue"}
    changed["spec"]["usages"] = ["server auth"]
    changed["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Main"}]}
    status, body = server.request("PUT", f"{CSRS}/parts", changed)
    assert status == 200, body
    assert (body["metadata"]["labels"], body["spec"]["usages"], body["status"]) == (
        {"team": "blue"},
        ["client auth"],
        {},
    )  # type: ignore[index]
    # /status may not approve...
    current = get(server, "parts")
    current["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Signer"}]}
    status, body = server.request("PUT", f"{CSRS}/parts/status", current)
    assert (status, body["message"]) == (422, 'CertificateSigningRequest.certificates.k8s.io "parts" is invalid: '
                                              'status.conditions: Forbidden: updates may not add a condition of '
                                              'type "Approved"')  # fmt: skip
    # ... and /approval may not issue: the certificate it carries is dropped.
    server.kubectl("certificate", "approve", "parts", check=True)
    current = get(server, "parts")
    current["status"]["certificate"] = self_signed_certificate()
    status, body = server.request("PUT", f"{CSRS}/parts/approval", current)
    assert status == 200 and "certificate" not in body["status"], body  # type: ignore[index]
    # /status issues the certificate: PEM CERTIFICATE blocks, once.
    current = get(server, "parts")
    current["status"]["certificate"] = base64.b64encode(b"not a certificate").decode()
    status, body = server.request("PUT", f"{CSRS}/parts/status", current)
    assert (status, body["message"]) == (422, 'CertificateSigningRequest.certificates.k8s.io "parts" is invalid: '
                                              'status.certificate: Invalid value: "<certificate data>": must contain '
                                              'at least one CERTIFICATE PEM block')  # fmt: skip
    current["status"]["certificate"] = self_signed_certificate()
    status, body = server.request("PUT", f"{CSRS}/parts/status", current)
    assert status == 200, body
    assert [c["type"] for c in body["status"]["conditions"]] == ["Approved"]  # type: ignore[index]
    current = get(server, "parts")
    current["status"]["certificate"] = self_signed_certificate()
    status, body = server.request("PUT", f"{CSRS}/parts/status", current)
    assert (status, body["message"]) == (422, 'CertificateSigningRequest.certificates.k8s.io "parts" is invalid: '
                                              "status.certificate: Forbidden: updates may not modify existing "
                                              "certificate content")  # fmt: skip


def test_validation_errors_are_upstreams(server: APIServerProcess) -> None:
    prefix = 'CertificateSigningRequest.certificates.k8s.io "{}" is invalid: '
    bad_pem = csr("bad-pem")
    bad_pem["spec"]["request"] = base64.b64encode(b"hello").decode()
    assert invalid(server, bad_pem) == prefix.format("bad-pem") + (
        "spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST"
    )
    assert invalid(server, csr("bad-signer", signer="widgets")) == prefix.format("bad-signer") + (
        "spec.signerName: Invalid value: \"widgets\": must be a fully qualified domain and path of the form "
        "'example.com/signer-name'")  # fmt: skip
    assert invalid(server, csr("short", expirationSeconds=599)) == prefix.format("short") + (
        "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"
    )
    assert invalid(server, csr("legacy", signer="kubernetes.io/legacy-unknown")) == prefix.format("legacy") + (
        'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via '
        "this API version")  # fmt: skip
    assert invalid(server, csr("no-usages", usages=())) == prefix.format("no-usages") + "spec.usages: Required value"
    message = invalid(server, csr("usages", usages=("client auth", "flying", "client auth")))
    assert message.startswith(prefix.format("usages") + '[spec.usages[1]: Unsupported value: "flying": supported '
                              'values: "any", "cert sign", "client auth",')  # fmt: skip
    assert message.endswith('"timestamping", spec.usages[2]: Duplicate value: "client auth"]')
    # A request signed by another key than the one it carries.
    pem = request_pem()
    der = x509.load_pem_x509_csr(pem).public_bytes(serialization.Encoding.DER)
    forged = x509.load_der_x509_csr(der[:-8] + bytes(b ^ 0x55 for b in der[-8:]))
    assert "ECDSA verification failure" in invalid(
        server, csr("forged", pem=forged.public_bytes(serialization.Encoding.PEM))
    )
    # Accepted once right, under any name a path takes.
    create(server, csr("Any_Name:at-all"))


def test_approving_needs_the_approve_verb_on_the_signer(server: APIServerProcess) -> None:
    create(server, csr("gadget", signer="example.com/gadgets"))
    approver = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "csr-approver"},
                "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                           "verbs": ["get"]},
                          {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"],
                           "verbs": ["update"]}]}  # fmt: skip
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "csr-approver"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-approver"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kim"}]}  # fmt: skip
    server.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [approver, binding]}),
                   check=True)  # fmt: skip

    def approve_as_kim() -> Any:
        res = server.kubectl("certificate", "approve", "gadget", "--as", "kim")
        # RBAC may not have seen the binding yet (a 403 of its own); the plugin's 403 names the signer.
        return res if res.returncode == 0 or "signerName" in res.stderr else None

    res = wait_for("the plugin's refusal", approve_as_kim)
    assert res.returncode == 1 and ('certificatesigningrequests.certificates.k8s.io "gadget" is forbidden: user not '
                                    'permitted to approve requests with signerName "example.com/gadgets"') in res.stderr  # fmt: skip
    approver["rules"].append({"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                              "resourceNames": ["example.com/gadgets"], "verbs": ["approve"]})  # fmt: skip
    server.kubectl("apply", "-f", "-", input=json.dumps(approver), check=True)
    wait_for(
        "kim may approve", lambda: server.kubectl("certificate", "approve", "gadget", "--as", "kim").returncode == 0
    )
    assert [c["type"] for c in get(server, "gadget")["status"]["conditions"]] == ["Approved"]
