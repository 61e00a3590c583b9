"""The CSR signing controller (upstream: pkg/controller/certificates/signer/signer.go and
cmd/kube-controller-manager/app/certificates.go, `certificatesigningrequest-signing-controller`, alias
`csrsigning`).

One signing loop per built-in signer, each with the CA of `--cluster-signing-cert-file` /
`--cluster-signing-key-file`, or of that signer's own pair of flags (`--cluster-signing-kubelet-serving-*`,
`--cluster-signing-kubelet-client-*`, `--cluster-signing-kube-apiserver-client-*`,
`--cluster-signing-legacy-unknown-*`; with any of these set, a signer without its own pair is not run). Without
any CA the controller does not start, as upstream.

A loop signs the approved, not failed requests for its signer. A request its signer does not allow gets the
condition Failed, reason SignerValidationFailure (the kubelet signers: the node certificate rules; the API server
client signer: usages among digital signature, key encipherment and client auth, with client auth). A
certificate lasts `--cluster-signing-duration` (8760h), or `spec.expirationSeconds` when that is shorter (never
less than 10 minutes). Certificates and conditions are written through the `status` subresource.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ...api.certificates import (
    CSRS,
    FAILED,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    KUBE_APISERVER_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    LEGACY_UNKNOWN_SIGNER,
    has_true_condition,
    is_approved,
    kubelet_client_problem,
    kubelet_serving_problem,
    parse_csr,
)
from ...api.meta import rfc3339
from ...client.cache import SharedInformerFactory
from ...client.rest import RESTClient
from .authority import CertificateAuthority, SigningPolicy
from .certificate_controller import CertificateController

log = logging.getLogger(__name__)

DEFAULT_CLUSTER_SIGNING_DURATION = 365 * 24 * 3600.0  # 8760h
MIN_DURATION = dt.timedelta(minutes=10)  # twice the backdating: a sanity floor for spec.expirationSeconds

# Problem checks: why a request may not be signed by the signer (None: it may).
Check = Callable[[x509.CertificateSigningRequest, list[str]], str | None]


def api_server_client_problem(req: x509.CertificateSigningRequest, usages: list[str]) -> str | None:
    """Upstream validAPIServerClientUsages: digital signature and key encipherment may come with client auth."""
    has_client_auth = False
    for u in usages:
        if u == "client auth":
            has_client_auth = True
        elif u not in ("digital signature", "key encipherment"):
            return f"invalid usage for client certificate: {u}"
    if not has_client_auth:
        return "missing required usage for client certificate: client auth"
    return None


# The signers, each with its controller name (upstream's csrsigning-* loops), its check and the flag prefix of
# its own CA files (--cluster-signing-<prefix>-cert-file).
@dataclass(frozen=True)
class SignerKind:
    signer_name: str
    loop_name: str
    flag: str
    check: Check


SIGNERS = (
    SignerKind(KUBELET_SERVING_SIGNER, "csrsigning-kubelet-serving", "kubelet_serving", kubelet_serving_problem),
    SignerKind(KUBE_APISERVER_CLIENT_KUBELET_SIGNER, "csrsigning-kubelet-client", "kubelet_client",
               kubelet_client_problem),
    SignerKind(KUBE_APISERVER_CLIENT_SIGNER, "csrsigning-kube-apiserver-client", "kube_apiserver_client",
               api_server_client_problem),
    SignerKind(LEGACY_UNKNOWN_SIGNER, "csrsigning-legacy-unknown", "legacy_unknown", lambda _req, _usages: None),
)  # fmt: skip


def signer_files(options: dict[str, Any]) -> dict[str, tuple[str, str]] | None:
    """Which signers run with which (cert file, key file), from the controller manager's options; None when no
    CA is given (the controller is then not started). ValueError for flags that contradict each other."""
    general = (options.get("cluster_signing_cert_file") or "", options.get("cluster_signing_key_file") or "")
    specific = {
        k.signer_name: (options.get(f"cluster_signing_{k.flag}_cert_file") or "",
                        options.get(f"cluster_signing_{k.flag}_key_file") or "")
        for k in SIGNERS
    }  # fmt: skip
    any_specific = any(cert or key for cert, key in specific.values())
    missing_general = not general[0] or not general[1]
    if missing_general and not any_specific:
        return None
    if not missing_general and any_specific:
        raise ValueError("cannot specify default and per controller certs at the same time")
    if any_specific:
        return {name: files for name, files in specific.items() if files[0] or files[1]}
    return {k.signer_name: general for k in SIGNERS}


def check_signer_files(options: dict[str, Any]) -> None:
    """ValueError, worded as kube-controller-manager's, when the signing flags cannot work: default and
    per-signer files together, or a CA that cannot be read or whose key is not its own."""
    for signer, (cert_file, key_file) in (signer_files(options) or {}).items():
        try:
            CertificateAuthority.from_files(cert_file, key_file)
        except ValueError as err:
            raise ValueError(f"failed to start {signer} certificate controller: {err}") from None


class Signer:
    """One signer's handler (upstream: signer.handle)."""

    def __init__(
        self, client: RESTClient, kind: SignerKind, ca: CertificateAuthority, cert_ttl: float,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:  # fmt: skip
        self.client = client
        self.kind = kind
        self.ca = ca
        self.cert_ttl = dt.timedelta(seconds=cert_ttl)
        self.clock = clock

    def duration(self, expiration_seconds: Any) -> dt.timedelta:
        """The requested duration when it is shorter than the configured one, at least 10 minutes."""
        if not isinstance(expiration_seconds, int) or isinstance(expiration_seconds, bool):
            return self.cert_ttl
        requested = dt.timedelta(seconds=expiration_seconds)
        if requested > self.cert_ttl:
            return self.cert_ttl
        return max(requested, MIN_DURATION)

    async def handle(self, csr: dict[str, Any]) -> None:
        if not is_approved(csr) or has_true_condition(csr, FAILED):
            return
        spec = csr.get("spec") or {}
        if spec.get("signerName") != self.kind.signer_name:
            return
        name = csr["metadata"]["name"]
        try:
            req = parse_csr(csr)
        except ValueError as err:
            raise ValueError(f"unable to parse csr {name!r}: {err}") from None
        usages = [str(u) for u in spec.get("usages") or []]
        problem = self.kind.check(req, usages)
        if problem is not None:
            csr.setdefault("status", {}).setdefault("conditions", []).append({
                "type": FAILED, "status": "True", "reason": "SignerValidationFailure", "message": problem,
                "lastUpdateTime": rfc3339(),
            })  # fmt: skip
            await self.client.update(CSRS, csr, subresource="status")
            return
        policy = SigningPolicy(ttl=self.duration(spec.get("expirationSeconds")), usages=tuple(usages))
        try:
            der = self.ca.sign(req, policy, self.clock())
        except ValueError as err:
            raise ValueError(f"error auto signing csr: {err}") from None
        pem = x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)
        csr.setdefault("status", {})["certificate"] = base64.b64encode(pem).decode()
        await self.client.update(CSRS, csr, subresource="status")


class CSRSigningController:
    """The signing loops of the signers given a CA (see `signer_files`), each with `workers` workers."""

    def __init__(
        self, client: RESTClient, factory: SharedInformerFactory, files: dict[str, tuple[str, str]], *,
        cert_ttl: float = DEFAULT_CLUSTER_SIGNING_DURATION, workers: int = 5,
    ) -> None:  # fmt: skip
        self.loops: list[CertificateController] = []
        self.signers: list[Signer] = []
        for kind in SIGNERS:
            if kind.signer_name not in files:
                log.info("Skipping CSR signer controller because specific files were specified for other signers "
                         "and not this one: %s", kind.signer_name)  # fmt: skip
                continue
            cert_file, key_file = files[kind.signer_name]
            try:
                ca = CertificateAuthority.from_files(cert_file, key_file)
            except ValueError as err:
                raise ValueError(f"failed to start {kind.signer_name} certificate controller: {err}") from None
            signer = Signer(client, kind, ca, cert_ttl)
            self.signers.append(signer)
            self.loops.append(CertificateController(kind.loop_name, factory, signer.handle, workers=workers))

    async def run(self) -> None:
        await asyncio.gather(*(loop.run() for loop in self.loops))
