"""Bearer tokens (upstream: apiserver/pkg/authentication/request/bearertoken, token/union, token/cache and
authenticator.WrapAudienceAgnosticToken).

`Authorization: Bearer <token>` is handed to the token authenticators in order (token file, legacy and bound
service-account tokens, bootstrap tokens); the first that accepts it wins. A token none accepts is refused:
with the errors of those that rejected it, or `invalid bearer token` when none said why. Successes are
remembered for a few seconds, per token and audiences, as upstream's cache does (a token bound to an object
that is deleted works on until its entry expires, there as here).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Protocol

from ..warning import add_audit_annotation, add_warning
from . import Credentials, InvalidCredentials, UserInfo, aggregate_message

INVALID_TOKEN = "invalid bearer token"
SPACE_BEFORE_TOKEN_WARNING = (
    "the provided Authorization header contains extra space before the bearer token, and is ignored"
)
SUCCESS_CACHE_TTL = 10.0  # upstream: TokenSuccessCacheTTL (failures are not cached)
_CACHE_LIMIT = 16_384


@dataclass(frozen=True)
class Response:
    """An accepted token: who it is, for which audiences, and what the request's response and audit event
    should carry because of it (kept with the cached answer, so each use adds them again)."""

    user: UserInfo
    audiences: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()


class TokenAuthenticator(Protocol):
    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        """The token's user, None when the token is not this authenticator's kind; raises InvalidCredentials
        when it is and is wrong. `audiences` are what the token must be meant for (the API audiences for a
        request, a TokenReview's spec.audiences)."""
        ...


def intersect(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x for x in a if x in b)


class AudienceAgnostic:
    """A token authenticator that knows nothing of audiences (the token file, bootstrap tokens): its tokens
    are for the API server's own audiences only."""

    def __init__(self, delegate: TokenAuthenticator, implicit_audiences: tuple[str, ...]) -> None:
        self.delegate = delegate
        self.implicit = implicit_audiences

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        if not self.implicit:
            return self.delegate.authenticate_token(token, audiences)
        auds = intersect(self.implicit, audiences)
        if not auds:
            return None
        resp = self.delegate.authenticate_token(token, audiences)
        if resp is None:
            return None
        return Response(resp.user, auds, resp.warnings, resp.annotations)


class TokenUnion:
    def __init__(self, authenticators: list[TokenAuthenticator]) -> None:
        self.authenticators = authenticators

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        failures: list[InvalidCredentials] = []
        for a in self.authenticators:
            try:
                resp = a.authenticate_token(token, audiences)
            except InvalidCredentials as err:
                failures.append(err)
                continue
            if resp is not None:
                return resp
        if failures:
            raise InvalidCredentials(aggregate_message(failures))
        return None


class CachedTokenAuthenticator:
    """Successful answers kept for `ttl` seconds, keyed by a hash of the token and the audiences."""

    def __init__(self, delegate: TokenAuthenticator, ttl: float = SUCCESS_CACHE_TTL) -> None:
        self.delegate = delegate
        self.ttl = ttl
        self._entries: dict[bytes, tuple[float, Response]] = {}

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        if self.ttl <= 0:
            return self.delegate.authenticate_token(token, audiences)
        h = hashlib.sha256()
        for part in (token, *audiences):
            raw = part.encode("utf-8", "surrogateescape")
            h.update(len(raw).to_bytes(4, "big") + raw)  # length-prefixed: "xy"+"z" is not "x"+"yz"
        key = h.digest()
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        resp = self.delegate.authenticate_token(token, audiences)
        if resp is not None:
            if len(self._entries) >= _CACHE_LIMIT:
                self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
                if len(self._entries) >= _CACHE_LIMIT:
                    self._entries.clear()
            self._entries[key] = (now + self.ttl, resp)
        return resp


class BearerTokenAuthenticator:
    """The request authenticator for `Authorization: Bearer <token>`."""

    def __init__(self, tokens: TokenAuthenticator, api_audiences: tuple[str, ...] = ()) -> None:
        self.tokens = tokens
        self.api_audiences = api_audiences

    def authenticate(self, request: Credentials) -> UserInfo | None:
        header = (request.headers.get("Authorization") or "").strip()
        if not header:
            return None
        parts = header.split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer":
            return None  # another scheme: not a bearer token, so not this authenticator's to refuse
        token = parts[1]
        if not token:
            if len(parts) == 3:
                add_warning(SPACE_BEFORE_TOKEN_WARNING)
            return None
        resp = self.authenticate_token(token, self.api_audiences)
        for text in resp.warnings:
            add_warning(text)
        for key, value in resp.annotations:
            add_audit_annotation(key, value)
        return resp.user

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response:
        """The token's Response; InvalidCredentials (with upstream's message) when it is not accepted."""
        resp = self.tokens.authenticate_token(token, audiences)
        if resp is None:
            raise InvalidCredentials(INVALID_TOKEN)
        return resp
