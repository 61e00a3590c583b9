"""A simulated node's client certificate, obtained as the kubelet's TLS bootstrap obtains it (upstream:
pkg/kubelet/certificate/bootstrap and client-go's util/certificate/csr).

With a bootstrap kubeconfig (a bootstrap token, group `system:bootstrappers`), each node makes an ECDSA P-256
key, asks for a client certificate for `system:node:<name>` in `system:nodes` with a CertificateSigningRequest of
signer `kubernetes.io/kube-apiserver-client-kubelet`, and waits until the controller manager's approving and
signing controllers have issued it. Certificate and key are kept together in `<cert-dir>/<node>/` as
`kubelet-client-<timestamp>.pem` with the symlink `kubelet-client-current.pem`, as the kubelet's file store keeps
them; a node that finds a current certificate there that has not expired uses it without asking again.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ..api import errors
from ..client.kubeconfig import ClientConfig
from ..client.rest import RESTClient
from ..file_modes import write_private_file

log = logging.getLogger(__name__)

KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
NODES_GROUP = "system:nodes"
# What the kubelet asks for with an ECDSA key (no key encipherment: that is for RSA key exchange).
USAGES = ("digital signature", "client auth")
CURRENT = "kubelet-client-current.pem"
CSRS = "certificatesigningrequests"
# A certificate this close to its end is asked for again at start (the kubelet rotates at 70-90% of its life).
RENEW_BEFORE = datetime.timedelta(hours=1)


class BootstrapError(Exception):
    """The certificate could not be obtained: the CSR was denied or failed, or the server refused it."""


def node_user(node: str) -> str:
    return f"system:node:{node}"


def current_certificate(cert_dir: Path, node: str) -> Path | None:
    """The node's current certificate file when it holds a certificate for the node that is still good."""
    path = cert_dir / node / CURRENT
    try:
        data = path.read_bytes()
        cert = x509.load_pem_x509_certificate(data)
        serialization.load_pem_private_key(data, None)
    except (OSError, ValueError, TypeError):
        return None
    cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if cn != [node_user(node)]:
        return None
    if cert.not_valid_after_utc - RENEW_BEFORE <= datetime.datetime.now(datetime.UTC):
        return None
    return path


def _csr_pem(node: str, key: ec.EllipticCurvePrivateKey) -> bytes:
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, NODES_GROUP),
            x509.NameAttribute(NameOID.COMMON_NAME, node_user(node)),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM)


def csr_name(key: ec.EllipticCurvePrivateKey, node: str) -> str:
    """The CSR's name, derived from the key, the subject and the usages as the kubelet derives it, so that a
    node restarted with the same key finds its earlier request instead of making another."""
    digest = hashlib.sha512()
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    for part in (public, node_user(node).encode(), NODES_GROUP.encode(), *(u.encode() for u in USAGES)):
        digest.update(len(part).to_bytes(4, "big") + part)
    return "node-csr-" + base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def _issued(csr: dict[str, Any]) -> bytes | None:
    """The certificate of an issued CSR; BootstrapError when it was denied or failed."""
    status = csr.get("status") or {}
    for c in status.get("conditions") or ():
        if c.get("type") in ("Denied", "Failed") and c.get("status", "True") == "True":
            raise BootstrapError(
                f"certificate request {csr['metadata']['name']} was {c['type'].lower()}: "
                f"{c.get('reason', '')} {c.get('message', '')}".strip()
            )
    cert = status.get("certificate")
    return base64.b64decode(cert) if cert else None


async def request_certificate(client: RESTClient, node: str, key: ec.EllipticCurvePrivateKey) -> bytes:
    """Create (or find) the node's CSR and wait until it is issued; its certificate (PEM)."""
    name = csr_name(key, node)
    body = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(_csr_pem(node, key)).decode(),
            "signerName": KUBELET_CLIENT_SIGNER,
            "usages": list(USAGES),
        },
    }
    try:
        csr = await client.create(CSRS, body)
    except errors.AlreadyExists:
        csr = await client.get(CSRS, name)
    while True:
        cert = _issued(csr)
        if cert is not None:
            return cert
        # Watch this one request from the version read (the bootstrap role may get, list and watch CSRs).
        rv = csr["metadata"].get("resourceVersion")
        async with client.watch(CSRS, field_selector=f"metadata.name={name}", resource_version=rv,
                                timeout_seconds=300) as w:  # fmt: skip
            async for ev in w:
                if ev.type in ("ADDED", "MODIFIED"):
                    csr = ev.object
                    if _issued(csr) is not None:
                        break
                elif ev.type == "DELETED":
                    raise BootstrapError(f"certificate request {name} was deleted before it was issued")
            else:
                csr = await client.get(CSRS, name)  # the watch ended: look again


def store(cert_dir: Path, node: str, cert: bytes, key: ec.EllipticCurvePrivateKey) -> Path:
    """Write certificate and key as one private file and point `kubelet-client-current.pem` at it."""
    folder = cert_dir / node
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d-%H-%M-%S")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = folder / f"kubelet-client-{stamp}.pem"
    write_private_file(path, cert + key_pem)
    link = folder / CURRENT
    tmp = folder / f".{CURRENT}.tmp"
    tmp.unlink(missing_ok=True)
    os.symlink(path.name, tmp)
    os.replace(tmp, link)  # the switch is atomic: a reader sees the old certificate or the new one
    return link


async def bootstrap(client: RESTClient, cert_dir: Path, node: str, *, timeout: float = 300.0) -> Path:
    """The node's certificate file: the current one when still good, else a new one asked for through
    `client` (the bootstrap identity)."""
    path = current_certificate(cert_dir, node)
    if path is not None:
        return path
    key = ec.generate_private_key(ec.SECP256R1())
    try:
        cert = await asyncio.wait_for(request_certificate(client, node, key), timeout)
    except TimeoutError:
        raise BootstrapError(
            f"timed out after {timeout:.0f}s waiting for the client certificate of node {node} "
            "(are the controller manager's csrapproving and csrsigning controllers running?)"
        ) from None
    except errors.StatusError as e:
        raise BootstrapError(f"cannot request a certificate for node {node}: {e}") from None
    return store(cert_dir, node, cert, key)


def node_config(bootstrap_config: ClientConfig, cert_file: Path) -> ClientConfig:
    """The bootstrap configuration's server and CA with the node's certificate instead of the token."""
    return bootstrap_config.with_options(
        token=None, token_file=None, token_source=None, username=None, password=None,
        client_cert_data=None, client_key_data=None, client_cert_file=str(cert_file), client_key_file=str(cert_file),
    )  # fmt: skip
