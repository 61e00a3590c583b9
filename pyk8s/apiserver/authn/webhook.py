"""The token authentication webhook: a bearer token none of the API server's own authenticators knows is sent
to a remote service in a TokenReview, which says who it is (upstream: apiserver plugin/pkg/authenticator/token/
webhook, with kube-apiserver's `--authentication-token-webhook-*` flags and the token cache it wraps it in).

- The review carries the token and the audiences it must be for (the API audiences, `--api-audiences`, or a
  TokenReview's own). An answer naming audiences must share one with them; one naming none is taken to be for
  the API audiences. The user is the answer's status.user (username, uid, groups, extra).
- `authenticated: false` is a refusal: with the answer's `status.error` as the reason when it gives one.
- Answers are cached for `--authentication-token-webhook-cache-ttl` (2m), per token and audiences, refusals
  too; a refusal that carries an error, and a call that failed, are not cached. A call that fails (the webhook
  is down, answers 500, or something that is not a TokenReview) is retried as upstream does and then refuses
  the token with the error.

The call goes through `deferred`: `authenticate_token` stays synchronous and raises `Pending` when the webhook
has to be asked (see pyk8s.apiserver.deferred).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from ...api import errors
from .. import deferred
from ..webhook import (
    DEFAULT_RETRY_BACKOFF,
    DEFAULT_TIMEOUT,
    Backoff,
    CallError,
    SetupError,
    WebhookClient,
    decode_object,
    json_kind,
    with_exponential_backoff,
)
from . import InvalidCredentials, UserInfo
from .bearertoken import Response

log = logging.getLogger("pyk8s.apiserver.authn.webhook")

GROUP = "authentication.k8s.io"
VERSIONS = ("v1", "v1beta1")
DEFAULT_VERSION = "v1beta1"  # upstream's default for --authentication-token-webhook-version
CACHE_TTL = 120.0
CACHE_LIMIT = 16_384
CANNOT_ASK = "the token authentication webhook cannot be asked from here"


def validate(config_file: str, version: str) -> list[str]:
    """Upstream's messages for a version it does not speak or a config file that cannot be used."""
    if version not in VERSIONS:
        return [f"unsupported authentication webhook version {errors.go_quote(version)}, supported versions are "
                f"{errors.go_quote(VERSIONS[0])}, {errors.go_quote(VERSIONS[1])}"]  # fmt: skip
    if config_file:
        try:
            WebhookClient.from_kubeconfig(config_file)
        except SetupError as err:
            return [str(err)]
    return []


@dataclass(frozen=True)
class _Record:
    """One review's outcome: the user (None: not authenticated), or why the token is refused."""

    response: Response | None
    error: str = ""


class WebhookTokenAuthenticator:
    """Asks the webhook a kubeconfig file names who a token is; see the module docstring."""

    def __init__(
        self,
        client: WebhookClient,
        version: str = DEFAULT_VERSION,
        implicit_audiences: tuple[str, ...] = (),
        cache_ttl: float = CACHE_TTL,
        backoff: Backoff = DEFAULT_RETRY_BACKOFF,
    ) -> None:
        problems = validate("", version)
        if problems:
            raise SetupError(problems[0])
        self.client = client
        self.version = version
        self.api_version = f"{GROUP}/{version}"
        self.implicit_audiences = implicit_audiences
        self.cache_ttl = cache_ttl
        self.backoff = backoff
        self._cache: dict[bytes, tuple[float, _Record]] = {}
        self._inflight: dict[bytes, asyncio.Task[_Record]] = {}

    @classmethod
    def from_kubeconfig(
        cls, path: str, version: str, implicit_audiences: tuple[str, ...], cache_ttl: float
    ) -> WebhookTokenAuthenticator:
        return cls(WebhookClient.from_kubeconfig(path, timeout=DEFAULT_TIMEOUT), version, implicit_audiences,
                   cache_ttl)  # fmt: skip

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        key = _cache_key(token, audiences)
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                return _outcome(hit[1])
            del self._cache[key]
        found, record = deferred.answer((id(self), key))
        if not found:
            if not deferred.deferrable():
                raise InvalidCredentials(CANNOT_ASK)
            raise deferred.Pending((id(self), key), lambda: self._fetch(token, audiences, key))
        return _outcome(record)

    async def run(self) -> None:
        """Hold the webhook's connections until cancelled (the server's shutdown), then close them."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.client.close()

    # -- the call ------------------------------------------------------------------------------------------------

    async def _fetch(self, token: str, audiences: tuple[str, ...], key: bytes) -> _Record:
        """The review's outcome; requests with the same token at once share one call (upstream's
        singleflight), which goes on even if the request that started it is cancelled."""
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._review(token, audiences, key))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _review(self, token: str, audiences: tuple[str, ...], key: bytes) -> _Record:
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        body = {"kind": "TokenReview", "apiVersion": self.api_version, "metadata": {"creationTimestamp": None},
                "spec": spec, "status": {"user": {}}}  # fmt: skip

        async def once() -> dict[str, Any]:
            answer = await self.client.post_json(body)
            return decode_object(answer, self.api_version, "TokenReview", VERSIONS)

        try:
            doc = await with_exponential_backoff(self.backoff, once)
            record = self._record(_status_of(doc), audiences)
        except CallError as err:
            log.error("Failed to make webhook authenticator request: %s", err)
            return _Record(None, str(err))
        if not record.error and self.cache_ttl > 0:  # errors are not cached; refusals without one are
            now = time.monotonic()
            if len(self._cache) >= CACHE_LIMIT:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= CACHE_LIMIT:
                    self._cache.clear()
            self._cache[key] = (now + self.cache_ttl, record)
        return record

    def _record(self, status: dict[str, Any], audiences: tuple[str, ...]) -> _Record:
        granted: tuple[str, ...] = ()
        if audiences:
            said = tuple(status.get("audiences") or ()) or self.implicit_audiences
            granted = tuple(a for a in audiences if a in said)
            if not granted:
                return _Record(None)
        if not status.get("authenticated"):
            return _Record(None, str(status.get("error") or ""))
        user = status.get("user") or {}
        extra = user.get("extra")
        info = UserInfo(
            str(user.get("username") or ""),
            str(user.get("uid") or ""),
            tuple(user.get("groups") or ()),
            {str(k): tuple(v or ()) for k, v in extra.items()} if extra else {},
        )
        return _Record(Response(info, granted))


def _outcome(record: _Record) -> Response | None:
    if record.error:
        raise InvalidCredentials(record.error)
    return record.response


def _cache_key(token: str, audiences: tuple[str, ...]) -> bytes:
    h = hashlib.sha256()
    for part in (token, *audiences):
        raw = part.encode("utf-8", "surrogateescape")
        h.update(len(raw).to_bytes(4, "big") + raw)  # length-prefixed: "xy"+"z" is not "x"+"yz"
    h.update(len(audiences).to_bytes(4, "big"))
    return h.digest()


def _status_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The answer's status, failing as Go's decoder would on the fields read being of the wrong type."""
    status = doc.get("status")
    if status is None:
        return {}

    def bad(value: Any, path: str, go: str) -> CallError:
        return CallError(f"json: cannot unmarshal {json_kind(value)} into Go struct field {path} of type {go}")

    if not isinstance(status, dict):
        raise bad(status, "TokenReview.status", "TokenReviewStatus")
    checks = (("authenticated", bool, "bool"), ("error", str, "string"), ("audiences", list, "[]string"),
              ("user", dict, "UserInfo"))  # fmt: skip
    for name, kind, go in checks:
        value = status.get(name)
        if value is not None and not isinstance(value, kind):
            raise bad(value, f"TokenReviewStatus.status.{name}", go)
    user = status.get("user") or {}
    for name, kind, go in (("username", str, "string"), ("uid", str, "string"), ("groups", list, "[]string"),
                           ("extra", dict, "map[string]ExtraValue")):  # fmt: skip
        value = user.get(name)
        if value is not None and not isinstance(value, kind):
            raise bad(value, f"UserInfo.status.user.{name}", go)
    return status
