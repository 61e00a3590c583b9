"""The certificate authority the CSR signers sign with (upstream: pkg/controller/certificates/authority and
signer/ca_provider.go): a CA certificate and key read from PEM files, and the permissive signing policy.

A certificate keeps the request's subject, subject alternative names and public key; its key usages and extended
key usages are the CSR's `spec.usages`; every other extension of the request is dropped; it is not a CA (basic
constraints, critical). It is valid from 5 minutes ago (clock skew) for its duration, less those 5 minutes for
long-lived certificates (8 h or more), and never past the CA's own expiry.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

BACKDATE = dt.timedelta(minutes=5)  # less than the shortest certificate a request may ask for (10 minutes)
SHORT = dt.timedelta(hours=8)  # below this a certificate is "short lived": 5 minutes are ~1% of 8 hours

# spec.usages -> the KeyUsage bit (cryptography's argument name)
_KEY_USAGES = {
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment", "cert sign": "key_cert_sign",
    "crl sign": "crl_sign", "encipher only": "encipher_only", "decipher only": "decipher_only",
}  # fmt: skip
# spec.usages -> (Go's x509.ExtKeyUsage number, which orders them in a certificate; the OID)
_EXT_KEY_USAGES: dict[str, tuple[int, ObjectIdentifier]] = {
    "any": (0, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE),
    "server auth": (1, ExtendedKeyUsageOID.SERVER_AUTH),
    "client auth": (2, ExtendedKeyUsageOID.CLIENT_AUTH),
    "code signing": (3, ExtendedKeyUsageOID.CODE_SIGNING),
    "email protection": (4, ExtendedKeyUsageOID.EMAIL_PROTECTION),
    "s/mime": (4, ExtendedKeyUsageOID.EMAIL_PROTECTION),
    "ipsec end system": (5, ObjectIdentifier("1.3.6.1.5.5.7.3.5")),
    "ipsec tunnel": (6, ObjectIdentifier("1.3.6.1.5.5.7.3.6")),
    "ipsec user": (7, ObjectIdentifier("1.3.6.1.5.5.7.3.7")),
    "timestamping": (8, ExtendedKeyUsageOID.TIME_STAMPING),
    "ocsp signing": (9, ExtendedKeyUsageOID.OCSP_SIGNING),
    "microsoft sgc": (10, ObjectIdentifier("1.3.6.1.4.1.311.10.3.3")),
    "netscape sgc": (11, ObjectIdentifier("2.16.840.1.113730.4.1")),
}

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey  # what Go's x509 signs with


def key_usages(usages: Iterable[str]) -> tuple[x509.KeyUsage | None, x509.ExtendedKeyUsage | None]:
    """The certificate's key usage and extended key usage extensions for `usages` (None: no such extension);
    ValueError for a usage there is no bit for (upstream: keyUsagesFromStrings)."""
    bits: set[str] = set()
    ext: dict[int, ObjectIdentifier] = {}
    unknown: list[str] = []
    for u in usages:
        if u in _KEY_USAGES:
            bits.add(_KEY_USAGES[u])
        elif u in _EXT_KEY_USAGES:
            number, oid = _EXT_KEY_USAGES[u]
            ext[number] = oid
        else:
            unknown.append(u)
    if unknown:
        raise ValueError("unrecognized usage values: [" + " ".join(f'"{u}"' for u in unknown) + "]")
    ku = None
    if bits:
        ku = x509.KeyUsage(**{name: name in bits for name in set(_KEY_USAGES.values())})  # type: ignore[arg-type]
    eku = x509.ExtendedKeyUsage([ext[n] for n in sorted(ext)]) if ext else None
    return ku, eku


@dataclass(frozen=True)
class SigningPolicy:
    """Upstream's PermissiveSigningPolicy: the duration and usages of one certificate."""

    ttl: dt.timedelta
    usages: tuple[str, ...]
    backdate: dt.timedelta = BACKDATE
    short: dt.timedelta = SHORT


class CertificateAuthority:
    def __init__(self, certificate: x509.Certificate, key: PrivateKey) -> None:
        self.certificate = certificate
        self.key = key

    @classmethod
    def from_files(cls, cert_file: str, key_file: str) -> CertificateAuthority:
        """The CA in PEM files; ValueError saying which file is wrong."""
        try:
            cert_pem = Path(cert_file).read_bytes()
        except OSError as err:
            raise ValueError(f"error reading CA cert file {cert_file!r}: {err.strerror or err}") from None
        try:
            key_pem = Path(key_file).read_bytes()
        except OSError as err:
            raise ValueError(f"error reading CA key file {key_file!r}: {err.strerror or err}") from None
        try:
            cert = x509.load_pem_x509_certificates(cert_pem)[0]
        except ValueError as err:
            raise ValueError(f"error reading CA cert file {cert_file!r}: {err}") from None
        try:
            key = serialization.load_pem_private_key(key_pem, None)
        except (ValueError, TypeError) as err:
            raise ValueError(f"error reading CA key file {key_file!r}: {err}") from None
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
            raise ValueError(f"error reading CA key file {key_file!r}: not a signing key")
        raw = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        if cert.public_key().public_bytes(*raw) != key.public_key().public_bytes(*raw):
            raise ValueError("tls: private key does not match public key")
        return cls(cert, key)

    def _hash(self) -> hashes.HashAlgorithm | None:
        """The digest Go's x509 picks for the CA's key: SHA-256 (ECDSA by curve size), none for EdDSA."""
        if isinstance(self.key, ed25519.Ed25519PrivateKey):
            return None
        if isinstance(self.key, ec.EllipticCurvePrivateKey):
            size = self.key.curve.key_size
            return hashes.SHA512() if size > 384 else hashes.SHA384() if size > 256 else hashes.SHA256()
        return hashes.SHA256()

    def sign(self, req: x509.CertificateSigningRequest, policy: SigningPolicy, now: dt.datetime) -> bytes:
        """The DER certificate for `req` under `policy`; ValueError when it cannot be issued."""
        if not req.is_signature_valid:
            raise ValueError("unable to verify certificate request signature")
        ku, eku = key_usages(policy.usages)
        not_before = now - policy.backdate
        # Short-lived certificates end their full duration from now; the others lose the backdating.
        not_after = now + policy.ttl if policy.ttl < policy.short else now + policy.ttl - policy.backdate
        ca_not_after = self.certificate.not_valid_after_utc
        if not_after >= ca_not_after:
            not_after = ca_not_after
        if not_before >= ca_not_after:
            raise ValueError(f"the signer has expired: NotAfter={ca_not_after}")
        if now >= ca_not_after:
            raise ValueError(f"refusing to sign a certificate that expired in the past: NotAfter={ca_not_after}")
        builder = (
            x509.CertificateBuilder()
            .subject_name(req.subject)
            .issuer_name(self.certificate.subject)
            .public_key(req.public_key())  # type: ignore[arg-type]
            .serial_number(secrets.randbits(128) or 1)
            .not_valid_before(not_before)
            .not_valid_after(not_after)
        )
        # The extensions in the order Go's x509 writes them.
        if ku is not None:
            builder = builder.add_extension(ku, critical=True)
        if eku is not None:
            builder = builder.add_extension(eku, critical=False)
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        try:
            ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)
            builder = builder.add_extension(aki, critical=False)
        except x509.ExtensionNotFound:
            pass
        try:
            san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            san = None
        if san is not None and len(san):
            builder = builder.add_extension(san, critical=not req.subject)  # critical when there is no subject
        cert = builder.sign(self.key, self._hash())
        return cert.public_bytes(serialization.Encoding.DER)
