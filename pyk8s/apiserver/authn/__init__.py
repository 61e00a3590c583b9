"""Authentication: who sent a request (upstream: apiserver/pkg/authentication).

Authenticators are tried in order; the first that recognises the request's credentials wins. A request
with no credentials is `system:anonymous`; one with credentials that no authenticator accepts is 401.
"""

from __future__ import annotations

import hmac
import ssl
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def anonymous(self) -> bool:
        return self.name == ANONYMOUS


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED_GROUP,))


class Credentials(Protocol):
    """What authenticators read from a request."""

    headers: Any

    def peer_certificate(self) -> dict[str, Any] | None: ...


class InvalidCredentials(Exception):
    """Credentials were presented and are wrong (401, never a fall-through to anonymous)."""


class Authenticator(Protocol):
    def authenticate(self, request: Credentials) -> UserInfo | None:
        """The user, None if this authenticator does not handle the request's credentials."""
        ...


class TokenAuthenticator:
    """Static bearer tokens (upstream: --token-auth-file)."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self.tokens = tokens

    def authenticate(self, request: Credentials) -> UserInfo | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise InvalidCredentials("invalid bearer token")
        # Compared as bytes: a header may carry any character, and compare_digest takes only ASCII str.
        presented = token.strip().encode("utf-8", "replace")
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode(), presented):
                return _authenticated(user)
        raise InvalidCredentials("invalid bearer token")


class X509Authenticator:
    """Client certificates signed by the cluster CA: CN is the user, O the groups (TLS verified them)."""

    def authenticate(self, request: Credentials) -> UserInfo | None:
        cert = request.peer_certificate()
        if not cert:
            return None
        cn, orgs = "", []
        for rdn in cert.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
                elif k == "organizationName":
                    orgs.append(v)
        if not cn:
            raise InvalidCredentials("client certificate has no common name")
        return _authenticated(UserInfo(cn, groups=tuple(orgs)))


def _authenticated(user: UserInfo) -> UserInfo:
    if AUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


class Union:
    """Try each authenticator; anonymous when none applies."""

    def __init__(self, authenticators: list[Authenticator], *, anonymous: bool = True) -> None:
        self.authenticators = authenticators
        self.anonymous = anonymous

    def authenticate(self, request: Credentials) -> UserInfo | None:
        for a in self.authenticators:
            user = a.authenticate(request)
            if user is not None:
                return user
        return ANONYMOUS_USER if self.anonymous else None


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
    except (ValueError, ssl.SSLError):
        return None  # the handshake is not done: not remembered
    _PEER_CERTIFICATES[ssl_object] = cert
    return cert
