"""Authentication: who sent a request (upstream: apiserver/pkg/authentication, and kube-apiserver's
pkg/kubeapiserver/authenticator `Config.New` for how the chain is put together).

The request authenticators (client certificates, bearer tokens) are tried in order; the first that recognises
the request's credentials wins, and `system:authenticated` is added to its groups. A request none of them
recognises is `system:anonymous` (when anonymous requests are allowed) — unless one of them *rejected* the
credentials it was shown: then the request is refused with 401 and anonymous is not tried (upstream's
`union.NewFailOnError(chain, anonymous)`).

The pieces live in their own modules: `x509`, `bearertoken` (the token union and its cache), `token_file`
(`--token-auth-file`), `serviceaccount` (service-account user names), `jwt`, `claims` and `legacy`
(service-account tokens), `bootstrap` (bootstrap tokens) and `options` (the flags, and the chain they build).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"  # upstream: user.CredentialIDKey


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
    """Credentials were presented and are wrong (401, never a fall-through to anonymous). The message is what
    a TokenReview reports in `status.error`."""


class Authenticator(Protocol):
    def authenticate(self, request: Credentials) -> UserInfo | None:
        """The user, None if this authenticator does not handle the request's credentials; raises
        InvalidCredentials when it handles them and they are wrong."""
        ...


def aggregate_message(errors: Iterable[BaseException]) -> str:
    """Several errors as one message, the way apimachinery's Aggregate prints them: one alone as it is, more
    as `[a, b]` with repeated messages left out."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """`system:authenticated` added to an authenticated user's groups (upstream: AuthenticatedGroupAdder):
    not to the anonymous user, and not when either implicit group is there already."""
    if user.name == ANONYMOUS or AUTHENTICATED_GROUP in user.groups or UNAUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


class Union:
    """The request authenticators in order, behind the authenticated-group adder, with the anonymous user as
    the fallback when none applies and none failed."""

    def __init__(self, authenticators: list[Authenticator], *, anonymous: bool = True) -> None:
        self.authenticators = authenticators
        self.anonymous = anonymous

    def authenticate(self, request: Credentials) -> UserInfo | None:
        failures: list[InvalidCredentials] = []
        for a in self.authenticators:
            try:
                user = a.authenticate(request)
            except InvalidCredentials as err:
                failures.append(err)
                continue
            if user is not None:
                return with_authenticated_group(user)
        if failures:
            raise InvalidCredentials(aggregate_message(failures))
        return ANONYMOUS_USER if self.anonymous else None


# The pieces, under the names other code imports from here (they import the definitions above).
from .token_file import TokenAuthenticator  # noqa: E402
from .x509 import X509Authenticator, peer_certificate_of  # noqa: E402

__all__ = [
    "ANONYMOUS",
    "ANONYMOUS_USER",
    "AUTHENTICATED_GROUP",
    "CREDENTIAL_ID_KEY",
    "UNAUTHENTICATED_GROUP",
    "Authenticator",
    "Credentials",
    "InvalidCredentials",
    "TokenAuthenticator",
    "Union",
    "UserInfo",
    "X509Authenticator",
    "aggregate_message",
    "peer_certificate_of",
    "with_authenticated_group",
]
