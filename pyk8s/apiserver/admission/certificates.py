"""The CertificateSigningRequest plugins (upstream: plugin/pkg/admission/certificates/{approval,signing,
subjectrestriction} and util.go):

- CertificateApproval: approving or denying a CSR (the `approval` subresource) needs the `approve` verb on
  `certificates.k8s.io/signers` named after the CSR's signerName, or on `<domain>/*`;
- CertificateSigning: writing `status.certificate` or changing `status.conditions` (the `status` subresource)
  needs the `sign` verb there;
- CertificateSubjectRestriction: no CSR for `kubernetes.io/kube-apiserver-client` may ask for the
  `system:masters` group.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cryptography import x509

from ..authn import UserInfo
from ..authz import Attributes as AuthzAttributes
from . import CREATE, UPDATE, Attributes
from .errors import new_forbidden

GROUP = "certificates.k8s.io"
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def _is_csr(a: Attributes) -> bool:
    return a.resource.group == GROUP and a.resource.plural == "certificatesigningrequests"


def is_authorized_for_signer_name(authorizer: Any, user: UserInfo, verb: str, signer_name: str) -> bool:
    """The verb on the signer by name, else on its domain's wildcard `<domain>/*` (upstream:
    IsAuthorizedForSignerName)."""
    if authorizer is None:
        return True  # no authorizer yet: the server is starting and serves nobody
    for name in (signer_name, signer_name.split("/")[0] + "/*"):
        attrs = AuthzAttributes(user=user, verb=verb, resource_request=True, api_group=GROUP, api_version="*",
                                resource="signers", name=name)  # fmt: skip
        if authorizer.authorize(attrs).allowed:
            return True
    return False


def _signer_name(obj: Any) -> str:
    return str(((obj or {}).get("spec") or {}).get("signerName") or "")


class CertificateApproval:
    name = "CertificateApproval"

    def __init__(self, host: Any) -> None:
        self.host = host

    async def admit(self, a: Attributes) -> None:
        return None

    async def validate(self, a: Attributes) -> None:
        if a.operation != UPDATE or a.subresource != "approval" or not _is_csr(a):
            return
        # The new object's signer: a change of signer while approving is refused by validation anyway.
        signer = _signer_name(a.object)
        if not is_authorized_for_signer_name(getattr(self.host, "authorizer", None), a.user, "approve", signer):
            raise new_forbidden(a, f'user not permitted to approve requests with signerName "{signer}"')


class CertificateSigning:
    name = "CertificateSigning"

    def __init__(self, host: Any) -> None:
        self.host = host

    async def admit(self, a: Attributes) -> None:
        return None

    async def validate(self, a: Attributes) -> None:
        if a.operation != UPDATE or a.subresource != "status" or not _is_csr(a):
            return
        old, new = (a.old_object or {}).get("status") or {}, (a.object or {}).get("status") or {}
        if old.get("certificate") == new.get("certificate") and (old.get("conditions") or []) == (
            new.get("conditions") or []
        ):
            return
        signer = _signer_name(a.old_object)
        if not is_authorized_for_signer_name(getattr(self.host, "authorizer", None), a.user, "sign", signer):
            raise new_forbidden(a, f'user not permitted to sign requests with signerName "{signer}"')


def parse_csr(request: Any) -> x509.CertificateSigningRequest:
    """`spec.request` (base64 of PEM in JSON) as a CSR; ValueError with upstream's words when it is not one."""
    try:
        pem = base64.b64decode(str(request or ""), validate=True)
    except (binascii.Error, ValueError):
        pem = b""
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    return x509.load_pem_x509_csr(pem)


class CertificateSubjectRestriction:
    name = "CertificateSubjectRestriction"

    async def admit(self, a: Attributes) -> None:
        return None

    async def validate(self, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource or not _is_csr(a):
            return
        signer = _signer_name(a.object)
        if signer != KUBE_APISERVER_CLIENT_SIGNER:
            return
        try:
            csr = parse_csr(((a.object or {}).get("spec") or {}).get("request"))
        except ValueError as err:
            raise new_forbidden(a, f"failed to parse CSR: {err}") from None
        for attr in csr.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME):
            if attr.value == "system:masters":
                raise new_forbidden(a, f"use of {signer} signer with system:masters group is not allowed")
