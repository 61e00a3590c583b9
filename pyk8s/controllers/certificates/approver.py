"""The CSR approving controller (upstream: pkg/controller/certificates/approver/sarapprove.go,
`certificatesigningrequest-approving-controller`, alias `csrapproving`).

It approves a kubelet's client certificate request (signer `kubernetes.io/kube-apiserver-client-kubelet`,
subject `system:node:<name>` in organisation `system:nodes` alone, no subject alternative names, usages digital
signature and client auth, with key encipherment or without) when the requester may do so, as a
SubjectAccessReview created through the API says:
- renewing its own certificate (requester == the subject's common name): `create` on
  `certificatesigningrequests/selfnodeclient`;
- any node's (a bootstrap token): `create` on `certificatesigningrequests/nodeclient`.
The approval is the condition Approved, reason AutoApproved, written through the `approval` subresource. A
request recognised but not allowed is retried with back-off (the binding may come later); requests already
approved or denied, or of other kinds, are left to people.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from ...api.certificates import (
    APPROVED,
    CSRS,
    GROUP,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    approval_state,
    kubelet_client_problem,
    parse_csr,
    subject_of,
)
from ...client.cache import SharedInformerFactory
from ...client.rest import RESTClient
from .certificate_controller import CertificateController, IgnorableError

CONTROLLER_NAME = "csrapproving"
AUTO_APPROVED = "AutoApproved"

Recognize = Callable[[dict[str, Any], x509.CertificateSigningRequest], bool]


def is_node_client_cert(csr: dict[str, Any], req: x509.CertificateSigningRequest) -> bool:
    spec = csr.get("spec") or {}
    if spec.get("signerName") != KUBE_APISERVER_CLIENT_KUBELET_SIGNER:
        return False
    return kubelet_client_problem(req, spec.get("usages") or []) is None


def is_self_node_client_cert(csr: dict[str, Any], req: x509.CertificateSigningRequest) -> bool:
    if (csr.get("spec") or {}).get("username") != subject_of(req).common_name:
        return False
    return is_node_client_cert(csr, req)


@dataclass(frozen=True)
class Recognizer:
    recognize: Recognize
    subresource: str  # of certificatesigningrequests, the permission a SubjectAccessReview checks (verb create)
    success_message: str


RECOGNIZERS = (
    Recognizer(is_self_node_client_cert, "selfnodeclient",
               "Auto approving self kubelet client certificate after SubjectAccessReview."),
    Recognizer(is_node_client_cert, "nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."),
)  # fmt: skip


class CSRApprovingController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.controller = CertificateController(CONTROLLER_NAME, factory, self.handle, workers=workers)

    async def run(self) -> None:
        await self.controller.run()

    async def handle(self, csr: dict[str, Any]) -> None:
        approved, denied = approval_state(csr)
        if approved or denied:
            return
        name = csr["metadata"]["name"]
        try:
            req = parse_csr(csr)
        except ValueError as err:
            raise ValueError(f"unable to parse csr {name!r}: {err}") from None
        tried: list[str] = []
        for r in RECOGNIZERS:
            if not r.recognize(csr, req):
                continue
            tried.append(r.subresource)
            if await self.authorize(csr, r.subresource):
                csr.setdefault("status", {}).setdefault("conditions", []).append(
                    {"type": APPROVED, "status": "True", "reason": AUTO_APPROVED, "message": r.success_message}
                )
                await self.client.update(CSRS, csr, subresource="approval")
                return
        if tried:
            raise IgnorableError(
                f"recognized csr {name!r} as [{' '.join(tried)}] but subject access review was not approved"
            )

    async def authorize(self, csr: dict[str, Any], subresource: str) -> bool:
        """Whether the requester may `create` `certificatesigningrequests/<subresource>`, asked of the API server
        as a SubjectAccessReview."""
        spec = csr.get("spec") or {}
        sar_spec: dict[str, Any] = {
            "user": spec.get("username", ""),
            "resourceAttributes": {"group": GROUP, "resource": CSRS, "verb": "create", "subresource": subresource},
        }
        for k in ("uid", "groups", "extra"):
            if spec.get(k):
                sar_spec[k] = spec[k]
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": sar_spec}
        answer = await self.client.create("subjectaccessreviews.authorization.k8s.io", sar)
        return bool((answer.get("status") or {}).get("allowed"))
