"""Kubeconfigs of the control plane's components, each with its own identity, as kubeadm writes them
(upstream: kubeadm's `init phase kubeconfig`): `scheduler.conf` as `system:kube-scheduler`,
`controller-manager.conf` as `system:kube-controller-manager` (the simulated nodes get theirs by TLS bootstrap:
`bootstrap_token`, `kubelet/certificate_bootstrap`). Each holds a client certificate signed by the cluster CA; under
RBAC and the Node authorizer each component then has exactly the rights upstream's default policy gives it.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..file_modes import write_private_file
from .certs import PKI, _b64, _issue, _key_pem, _load_key

SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
NODES_GROUP = "system:nodes"


def node_user(node: str) -> str:
    return f"system:node:{node}"


def client_certificate(pki: PKI, user: str, groups: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A client certificate (CN the user, O each group) signed by the cluster CA, and its key (PEM)."""
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
            x509.NameAttribute(NameOID.COMMON_NAME, user),
        ]
    )
    cert = _issue(subject, key, ca.subject, _load_key(pki.ca_key), usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _written_for(path: Path) -> tuple[str, str, tuple[str, ...]] | None:
    """The server, user and groups a kubeconfig written here is for (None when it cannot be read)."""
    import base64

    try:
        doc = yaml.safe_load(path.read_text())
        server = doc["clusters"][0]["cluster"]["server"]
        cert = x509.load_pem_x509_certificate(base64.b64decode(doc["users"][0]["user"]["client-certificate-data"]))
    except (OSError, ValueError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None
    cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    return (server, str(cn[0]) if cn else "", orgs)


def write_component_kubeconfig(
    path: Path, server: str, pki: PKI, user: str, groups: tuple[str, ...] = (), *, cluster: str = "pyk8s"
) -> None:
    """A kubeconfig that reaches `server` as `user`, written anew when it is missing or names another user or
    server (a certificate is cheap; reissuing on every start would only churn the file)."""
    if path.exists() and _written_for(path) == (server, user, tuple(groups)):
        return
    cert, key = client_certificate(pki, user, groups)
    import base64

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(pki.ca_cert)}}],
        "users": [{"name": user, "user": {"client-certificate-data": base64.b64encode(cert).decode(),
                                          "client-key-data": base64.b64encode(key).decode()}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
        "current-context": f"{user}@{cluster}",
        "preferences": {},
    }  # fmt: skip
    write_private_file(path, yaml.safe_dump(config, sort_keys=False).encode())
