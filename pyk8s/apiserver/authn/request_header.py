"""The front proxy's authenticator (upstream: apiserver/pkg/authentication/request/headerrequest): a client
whose certificate the request-header CA signed (`--requestheader-client-ca-file`), with a CN in
`--requestheader-allowed-names` (any CN when that is empty), is a proxy that has authenticated the user
already and names it in headers: the user in the first non-empty `--requestheader-username-headers`, groups in
every `--requestheader-group-headers` value, extras in `--requestheader-extra-headers-prefix` headers (the rest
of the header's name, lower-cased and unescaped, is the key).

Anybody else's headers of those names are not believed: only the proxy's certificate makes them count. And the
proxy's certificate is not a user of its own: the x509 authenticator leaves certificates of that CA alone
(`signed_by`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from . import InvalidCredentials, UserInfo
from .x509 import DER_KEY


def read_cas(path: str | Path) -> tuple[x509.Certificate, ...]:
    """The CA certificates of a PEM bundle; ValueError when it holds none."""
    cas = tuple(x509.load_pem_x509_certificates(Path(path).read_bytes()))
    if not cas:
        raise ValueError(f"{path}: no certificates")
    return cas


@functools.lru_cache(maxsize=4096)  # a connection's certificate is asked about at each request
def signed_by(der: bytes, cas: tuple[x509.Certificate, ...]) -> bool:
    """Whether one of `cas` signed the certificate `der` directly (the TLS handshake has checked the chain
    against every CA the listener trusts; this says which)."""
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError:
        return False
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


class RequestHeaderAuthenticator:
    def __init__(
        self,
        cas: Sequence[x509.Certificate],
        allowed_names: Sequence[str],
        username_headers: Sequence[str],
        group_headers: Sequence[str],
        extra_prefixes: Sequence[str],
    ) -> None:
        self.cas = tuple(cas)
        self.allowed_names = frozenset(allowed_names)
        self.username_headers = tuple(username_headers)
        self.group_headers = tuple(group_headers)
        self.extra_prefixes = tuple(p.lower() for p in extra_prefixes)

    def authenticate(self, request: object) -> UserInfo | None:
        cert = request.peer_certificate()  # type: ignore[attr-defined]
        if not cert or not self.username_headers:
            return None
        der = cert.get(DER_KEY)
        if not der or not signed_by(der, self.cas):
            return None
        cn = ""
        for rdn in cert.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
        if self.allowed_names and cn not in self.allowed_names:
            raise InvalidCredentials(f"x509: subject with cn={cn} is not in the allowed list")
        headers = request.headers  # type: ignore[attr-defined]
        name = next((v for h in self.username_headers for v in headers.getall(h, ()) if v), "")
        if not name:
            return None  # the proxy named nobody: its own certificate does not make it a user
        groups = tuple(v for h in self.group_headers for v in headers.getall(h, ()))
        extra: dict[str, tuple[str, ...]] = {}
        for header, value in headers.items():
            lower = header.lower()
            for prefix in self.extra_prefixes:
                if lower.startswith(prefix) and len(lower) > len(prefix):
                    key = unquote(lower[len(prefix) :])
                    extra[key] = (*extra.get(key, ()), value)
                    break
        return UserInfo(name, groups=groups, extra=extra)
