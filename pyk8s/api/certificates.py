"""CertificateSigningRequests as both ends read them: the built-in signer names, the key usages, PEM and PKCS#10
parsing with upstream's error words, the node certificate rules, and the approval conditions (upstream:
k8s.io/api/certificates/v1's constants, pkg/apis/certificates/helpers.go, and the condition helpers of
pkg/controller/certificates/certificate_controller_utils.go).

A CSR is a plain dict in its JSON shape: `spec.request` and `status.certificate` are base64 strings of PEM.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

GROUP = "certificates.k8s.io"
CSRS = "certificatesigningrequests"

KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"

APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"

# Every usage the API accepts (upstream: allValidUsages), sorted as its error messages list them.
KEY_USAGES = (
    "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
    "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
    "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
    "server auth", "signing", "timestamping",
)  # fmt: skip

_KUBELET_CLIENT_USAGES = frozenset({"digital signature", "key encipherment", "client auth"})
_KUBELET_CLIENT_USAGES_NO_RSA = frozenset({"digital signature", "client auth"})
_KUBELET_SERVING_USAGES = frozenset({"digital signature", "key encipherment", "server auth"})
_KUBELET_SERVING_USAGES_NO_RSA = frozenset({"digital signature", "server auth"})

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"


# -- PEM ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PEMBlock:
    type: str
    headers: bool
    der: bytes


_PEM_BLOCK = re.compile(rb"(?:^|\n)-----BEGIN ([^\r\n]*?)-----\r?\n(.*?)\n-----END \1-----", re.DOTALL)


def pem_blocks(data: bytes) -> list[PEMBlock]:
    """The well-formed PEM blocks of `data`, in order (what repeated calls of Go's pem.Decode find: text between
    blocks and malformed blocks are skipped)."""
    out: list[PEMBlock] = []
    for m in _PEM_BLOCK.finditer(data):
        lines = m.group(2).replace(b"\r", b"").split(b"\n")
        headers = bool(lines) and b":" in lines[0]
        if headers:
            # Headers run to the first blank line; the base64 body follows it.
            end = lines.index(b"") if b"" in lines else len(lines)
            lines = lines[end + 1 :]
        try:
            der = base64.b64decode(b"".join(line.strip() for line in lines), validate=True)
        except (binascii.Error, ValueError):
            continue
        out.append(PEMBlock(m.group(1).decode(errors="replace"), headers, der))
    return out


def decode_bytes(value: Any) -> bytes:
    """A []byte field as JSON carries it (base64); b"" for anything else."""
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


class GoBytes:
    """A []byte shown as Go's %#v shows it in a field error (`[]byte{0x2d, 0x2d}`, `[]byte(nil)`)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def go_string(self) -> str:
        if not self.data:
            return "[]byte(nil)"
        return "[]byte{" + ", ".join(f"0x{b:x}" for b in self.data) + "}"


# -- certificate requests -----------------------------------------------------------------------------------------


def parse_csr_pem(pem: bytes) -> x509.CertificateSigningRequest:
    """The PKCS#10 request in the first PEM block of `pem` (upstream: certificates.ParseCSR); ValueError with
    upstream's words when there is none."""
    blocks = pem_blocks(pem)
    if not blocks or blocks[0].type != "CERTIFICATE REQUEST":
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return x509.load_der_x509_csr(blocks[0].der)
    except ValueError:
        raise ValueError("x509: malformed certificate request") from None


def parse_csr(csr: Mapping[str, Any]) -> x509.CertificateSigningRequest:
    """The request of a CSR object (its `spec.request`)."""
    return parse_csr_pem(decode_bytes((csr.get("spec") or {}).get("request")))


def check_signature(req: x509.CertificateSigningRequest) -> None:
    """ValueError, worded as Go's CheckSignature, when the request is not signed by its own key."""
    try:
        if req.is_signature_valid:
            return
    except (UnsupportedAlgorithm, InvalidSignature, ValueError):
        raise ValueError("x509: cannot verify signature: algorithm unimplemented") from None
    key = req.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        raise ValueError("crypto/rsa: verification error")
    if isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("x509: ECDSA verification failure")
    if isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError("x509: Ed25519 verification failure")
    raise ValueError("x509: cannot verify signature: algorithm unimplemented")


@dataclass(frozen=True)
class Subject:
    """What the node rules read of a request: its subject and subject alternative names."""

    common_name: str
    organizations: tuple[str, ...]
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    emails: tuple[str, ...]
    uris: tuple[str, ...]


def subject_of(req: x509.CertificateSigningRequest) -> Subject:
    names = req.subject
    cns = [str(a.value) for a in names.get_attributes_for_oid(x509.NameOID.COMMON_NAME)]
    orgs = tuple(str(a.value) for a in names.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME))
    try:
        san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (x509.ExtensionNotFound, ValueError):
        san = x509.SubjectAlternativeName([])
    return Subject(
        common_name=cns[-1] if cns else "",  # Go keeps the last CN it reads
        organizations=orgs,
        dns_names=tuple(san.get_values_for_type(x509.DNSName)),
        ip_addresses=tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress)),
        emails=tuple(san.get_values_for_type(x509.RFC822Name)),
        uris=tuple(san.get_values_for_type(x509.UniformResourceIdentifier)),
    )


def _go_list(values: Iterable[str]) -> str:
    return "[" + " ".join(sorted(values)) + "]"


def kubelet_client_problem(req: x509.CertificateSigningRequest, usages: Iterable[str]) -> str | None:
    """Why the request is not a kubelet's client certificate request, or None (upstream:
    ValidateKubeletClientCSR)."""
    s = subject_of(req)
    if s.organizations != (NODES_GROUP,):
        return "subject organization is not system:nodes"
    if s.dns_names:
        return "DNS subjectAltNames are not allowed"
    if s.emails:
        return "Email subjectAltNames are not allowed"
    if s.ip_addresses:
        return "IP subjectAltNames are not allowed"
    if s.uris:
        return "URI subjectAltNames are not allowed"
    if not s.common_name.startswith(NODE_USER_PREFIX):
        return "subject common name does not begin with system:node:"
    wanted = set(usages)
    if wanted != _KUBELET_CLIENT_USAGES and wanted != _KUBELET_CLIENT_USAGES_NO_RSA:
        return f"usages did not match {_go_list(_KUBELET_CLIENT_USAGES)}"
    return None


def kubelet_serving_problem(req: x509.CertificateSigningRequest, usages: Iterable[str]) -> str | None:
    """Why the request is not a kubelet's serving certificate request, or None (upstream:
    ValidateKubeletServingCSR)."""
    s = subject_of(req)
    if s.organizations != (NODES_GROUP,):
        return "subject organization is not system:nodes"
    if not s.dns_names and not s.ip_addresses:
        return "DNS or IP subjectAltName is required"
    if s.emails:
        return "Email subjectAltNames are not allowed"
    if s.uris:
        return "URI subjectAltNames are not allowed"
    wanted = set(usages)
    if wanted != _KUBELET_SERVING_USAGES and wanted != _KUBELET_SERVING_USAGES_NO_RSA:
        return f"usages did not match {_go_list(_KUBELET_SERVING_USAGES)}"
    if not s.common_name.startswith(NODE_USER_PREFIX):
        return "subject common name does not begin with system:node:"
    return None


# -- conditions ---------------------------------------------------------------------------------------------------


def conditions_of(csr: Mapping[str, Any]) -> list[dict[str, Any]]:
    conditions = (csr.get("status") or {}).get("conditions") or []
    return [c for c in conditions if isinstance(c, dict)]


def approval_state(csr: Mapping[str, Any]) -> tuple[bool, bool]:
    """(approved, denied): whether any condition has either type (upstream: GetCertApprovalCondition)."""
    types = {c.get("type") for c in conditions_of(csr)}
    return APPROVED in types, DENIED in types


def is_approved(csr: Mapping[str, Any]) -> bool:
    """Approved and not denied (upstream: IsCertificateRequestApproved)."""
    approved, denied = approval_state(csr)
    return approved and not denied


def has_true_condition(csr: Mapping[str, Any], type_: str) -> bool:
    """A condition of `type_` with status True or none (upstream: HasTrueCondition)."""
    return any(c.get("type") == type_ and c.get("status", "") in ("", "True") for c in conditions_of(csr))


def certificate_of(csr: Mapping[str, Any]) -> bytes:
    """The issued certificate's PEM, b"" before it is issued."""
    return decode_bytes((csr.get("status") or {}).get("certificate"))
