"""The cluster's PKI and the admin kubeconfig.

On first start the API server makes a CA, a serving certificate for its addresses, an admin client
certificate (CN `pyk8s-admin`, O `system:masters`) and an admin bearer token, under `<data-dir>/pki`;
later starts reuse them, and re-issue the serving certificate when its names change. Beside them, as kubeadm
lays out a control plane's PKI, a front-proxy CA and the `front-proxy-client` certificate it signs: the
identity the aggregator presents to extension API servers (`--proxy-client-cert-file`), which they trust
through `--requestheader-client-ca-file`. The data directory and
`pki/` are 0700, the private keys, the token and admin.kubeconfig 0600 (`pyk8s.file_modes`).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..file_modes import ensure_private_dir, tighten_file, write_private_file

ADMIN_USER = "pyk8s-admin"
ADMIN_GROUP = "system:masters"
FRONT_PROXY_CA_NAME = "front-proxy-ca"  # kubeadm's names for the front-proxy CA and client certificate
FRONT_PROXY_CLIENT_NAME = "front-proxy-client"
_VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class PKI:
    dir: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    admin_token: str
    front_proxy_ca_cert: Path
    front_proxy_ca_key: Path
    front_proxy_client_cert: Path
    front_proxy_client_key: Path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    sans: list[x509.GeneralName] | None = None,
    usage: list[x509.ObjectIdentifier] | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=True, data_encipherment=False,
                key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _san_list(names: list[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for n in dict.fromkeys(names):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return out


def _cert_sans(path: Path) -> set[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(v) for v in ext.get_values_for_type(x509.IPAddress)} | set(ext.get_values_for_type(x509.DNSName))


def serving_names(bind_address: str, extra: list[str]) -> list[str]:
    names = ["localhost", "127.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
    if bind_address and bind_address not in ("0.0.0.0", "::"):
        names.append(bind_address)
    return names + [n for n in extra if n]


def ensure_pki(data_dir: Path, names: list[str]) -> PKI:
    """Create what is missing under `<data_dir>/pki` and return where everything is."""
    ensure_private_dir(data_dir)
    d = data_dir / "pki"
    ensure_private_dir(d)
    # Secrets written by an older pyk8s, or loosened by hand, are made private again (pyk8s.file_modes).
    keys = ("ca.key", "apiserver.key", "admin.key", "front-proxy-ca.key", "front-proxy-client.key", "sa.key")
    for secret in (*keys, "admin.token"):
        tighten_file(d / secret)
    tighten_file(data_dir / "admin.kubeconfig")
    ca_cert, ca_key = d / "ca.crt", d / "ca.key"
    if not ca_cert.exists() or not ca_key.exists():
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyk8s-ca")])
        cert = _issue(name, key, name, key, ca=True)
        write_private_file(ca_key, _key_pem(key))
        ca_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    ca_key_obj = _load_key(ca_key)
    ca_name = x509.load_pem_x509_certificate(ca_cert.read_bytes()).subject

    serving_cert, serving_key = d / "apiserver.crt", d / "apiserver.key"
    if not serving_cert.exists() or not serving_key.exists() or not set(names) <= _cert_sans(serving_cert):
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
        cert = _issue(subject, key, ca_name, ca_key_obj, sans=_san_list(names), usage=[ExtendedKeyUsageOID.SERVER_AUTH])
        write_private_file(serving_key, _key_pem(key))
        serving_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    admin_cert, admin_key = d / "admin.crt", d / "admin.key"
    if not admin_cert.exists() or not admin_key.exists():
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, ADMIN_GROUP),
                x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
            ]
        )
        cert = _issue(subject, key, ca_name, ca_key_obj, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        write_private_file(admin_key, _key_pem(key))
        admin_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    token_file = d / "admin.token"
    if not token_file.exists():
        write_private_file(token_file, secrets.token_urlsafe(32).encode())
    token = token_file.read_text().strip()
    proxy_ca, proxy_ca_key, proxy_client, proxy_client_key = _ensure_front_proxy(d)
    ensure_service_account_key(d)
    return PKI(
        d, ca_cert, ca_key, serving_cert, serving_key, admin_cert, admin_key, token,
        proxy_ca, proxy_ca_key, proxy_client, proxy_client_key,
    )  # fmt: skip


def _ensure_front_proxy(d: Path) -> tuple[Path, Path, Path, Path]:
    """The front-proxy CA (its own, as kubeadm's: a client certificate of the cluster CA must not be able to
    assert identities in headers) and the `front-proxy-client` certificate, created when missing."""
    ca_cert, ca_key = d / "front-proxy-ca.crt", d / "front-proxy-ca.key"
    if not ca_cert.exists() or not ca_key.exists():
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CA_NAME)])
        write_private_file(ca_key, _key_pem(key))
        ca_cert.write_bytes(_issue(name, key, name, key, ca=True).public_bytes(serialization.Encoding.PEM))
    client_cert, client_key = d / "front-proxy-client.crt", d / "front-proxy-client.key"
    if not client_cert.exists() or not client_key.exists() or not _issued_by(client_cert, ca_cert):
        issuer_key = _load_key(ca_key)
        issuer = x509.load_pem_x509_certificate(ca_cert.read_bytes()).subject
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CLIENT_NAME)])
        cert = _issue(subject, key, issuer, issuer_key, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        write_private_file(client_key, _key_pem(key))
        client_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return ca_cert, ca_key, client_cert, client_key


def ensure_service_account_key(d: Path) -> tuple[Path, Path]:
    """The key pair service-account tokens are signed with, `sa.key` and `sa.pub` as kubeadm names them (RSA
    2048 as kubeadm makes it, so tokens are RS256, what every OIDC relying party accepts)."""
    key_path, pub_path = d / "sa.key", d / "sa.pub"
    if not key_path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())  # fmt: skip
        write_private_file(key_path, pem)
        pub_path.unlink(missing_ok=True)
    if not pub_path.exists():
        private = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        pub_path.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    return key_path, pub_path


def _issued_by(cert_path: Path, ca_path: Path) -> bool:
    """Whether the certificate at `cert_path` names the CA at `ca_path` as its issuer (a CA made anew, its old
    client certificate is re-issued)."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    ca = x509.load_pem_x509_certificate(ca_path.read_bytes())
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, pki: PKI | None, *, cluster: str = "pyk8s") -> None:
    """A kubeconfig for the admin: client certificate over HTTPS, or nothing over plain HTTP."""
    cluster_entry: dict[str, str] = {"server": server}
    user: dict[str, str] = {}
    if pki is not None and server.startswith("https://"):
        cluster_entry["certificate-authority-data"] = _b64(pki.ca_cert)
        user = {"client-certificate-data": _b64(pki.admin_cert), "client-key-data": _b64(pki.admin_key)}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": f"{cluster}-admin", "user": user}],
        "contexts": [
            {"name": cluster, "context": {"cluster": cluster, "user": f"{cluster}-admin", "namespace": "default"}}
        ],
        "current-context": cluster,
        "preferences": {},
    }
    write_private_file(path, yaml.safe_dump(config, sort_keys=False).encode())


def self_signed_serving_pair(names: list[str]) -> tuple[bytes, bytes]:
    """A self-signed serving certificate and its key (PEM) for a component's secure port when it is given
    none, as kube-scheduler and kube-controller-manager generate one in memory."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "localhost")])
    cert = _issue(subject, key, subject, key, sans=_san_list(names), usage=[ExtendedKeyUsageOID.SERVER_AUTH])
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def self_signed_server_context(names: list[str]) -> ssl.SSLContext:
    """A server-side TLS context with a fresh self-signed certificate for `names` (see self_signed_serving_pair)."""
    cert, key = self_signed_serving_pair(names)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as d:  # ssl wants files; they live only as long as loading them
        cp, kp = Path(d, "tls.crt"), Path(d, "tls.key")
        cp.write_bytes(cert)
        kp.write_bytes(key)
        ctx.load_cert_chain(cp, kp)
    return ctx
