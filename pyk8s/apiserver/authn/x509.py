"""Client certificates signed by the cluster CA (upstream: apiserver/pkg/authentication/request/x509): the
subject's CN is the user, its O values the groups, and the certificate's SHA-256 the credential id. The TLS
handshake has verified the chain already (the listener asks for a client certificate and checks it)."""

from __future__ import annotations

import hashlib
import ssl
import weakref
from typing import Any

from . import CREDENTIAL_ID_KEY, Credentials, UserInfo

# Where the credential id and the DER form of a certificate are kept, in the dict `peer_certificate_of` returns.
_CREDENTIAL_ID = "pyk8s.credentialID"
DER_KEY = "pyk8s.der"


class X509Authenticator:
    """`proxy_cas`: the request-header CAs (when they are not client CAs too): their certificates are front
    proxies', which speak for users (`request_header`) and are no users themselves."""

    def __init__(self, proxy_cas: tuple[Any, ...] = ()) -> None:
        self.proxy_cas = proxy_cas

    def authenticate(self, request: Credentials) -> UserInfo | None:
        cert = request.peer_certificate()
        if not cert:
            return None
        if self.proxy_cas:
            from .request_header import signed_by

            der = cert.get(DER_KEY)
            if der and signed_by(der, self.proxy_cas):
                return None
        cn, orgs = "", []
        for rdn in cert.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
                elif k == "organizationName":
                    orgs.append(v)
        if not cn:
            return None  # not a user certificate: other authenticators may still know the request
        credential_id = cert.get(_CREDENTIAL_ID)
        extra = {CREDENTIAL_ID_KEY: (credential_id,)} if credential_id else {}
        return UserInfo(cn, groups=tuple(orgs), extra=extra)


# A connection's client certificate, kept for its life: getpeercert decodes it anew each time (a few % of the
# API server's time under load), and a TLS connection's peer does not change (renegotiation is refused).
_PEER_CERTIFICATES: weakref.WeakKeyDictionary[ssl.SSLObject, dict[str, Any] | None] = weakref.WeakKeyDictionary()


def peer_certificate_of(ssl_object: ssl.SSLObject | None) -> dict[str, Any] | None:
    if ssl_object is None:
        return None
    try:
        return _PEER_CERTIFICATES[ssl_object]
    except KeyError:
        pass
    try:
        cert: dict[str, Any] | None = ssl_object.getpeercert()  # type: ignore[assignment]
        der = ssl_object.getpeercert(binary_form=True) if cert else None
    except (ValueError, ssl.SSLError):
        return None  # the handshake is not done: not remembered
    if cert and der:
        cert = {**cert, _CREDENTIAL_ID: "X509SHA256=" + hashlib.sha256(der).hexdigest(), DER_KEY: der}
    _PEER_CERTIFICATES[ssl_object] = cert
    return cert
