"""The handler chain, in kube-apiserver's order (upstream: apiserver/pkg/server/config.go
DefaultBuildHandlerChain): panic recovery → request info → authentication → audit → impersonation →
authorization → in-flight limit → timeout → handler. The filters run as one function around the handler (an
aiohttp middleware in shape, which the server calls itself); later issues plug RBAC, audit policies and
priority-and-fairness into the same places."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from ..api import errors
from ..api.duration import parse_go_duration
from . import deferred
from .audit import DECISION_ANNOTATION, REASON_ANNOTATION, Auditor
from .authn import (
    ANONYMOUS,
    AUTHENTICATED_GROUP,
    UNAUTHENTICATED_GROUP,
    InvalidCredentials,
    Union,
    UserInfo,
    peer_certificate_of,
)
from .authn.serviceaccount import InvalidUsername, make_username, split_username
from .authz import AlwaysAllow, Attributes, Authorizer, Decision, attributes_of, forbidden
from .encoding import status_response
from .inflight import WAIT_FRACTION, InflightLimit
from .request_info import request_info
from .warning import begin_request, take_audit_annotations

log = logging.getLogger("pyk8s.apiserver")

PANIC_MESSAGE = "the server could not serve this request; the error is in the API server's log"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class ChainConfig:
    authenticator: Union
    authorizer: Authorizer = field(default_factory=AlwaysAllow)
    anonymous_is_admin: bool = False  # the insecure port: everyone is the admin, as upstream's was
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    auditor: Auditor | None = None  # --audit-policy-file and a backend: off when None
    on_request_done: Callable[[web.Request, int, float], None] | None = None


class _Credentials:
    def __init__(self, request: web.Request) -> None:
        self.headers = request.headers
        self._transport = request.transport

    def peer_certificate(self) -> dict[str, Any] | None:
        if self._transport is None:
            return None
        return peer_certificate_of(self._transport.get_extra_info("ssl_object"))


def _parse_timeout(raw: str) -> float | None:
    """The `timeout` parameter as Go's time.ParseDuration reads it ("30s", "1m0s"), None when it does not."""
    try:
        return parse_go_duration(raw) / 1e9
    except ValueError:
        return None


class RequestDeadlines:
    """The timeout filter's clock: one sweeper task cancels requests past their deadline, instead of a timer
    per request (asyncio.timeout cost about 8% of a GET). A request ends at most `resolution` seconds late,
    which for deadlines of seconds to a minute is what upstream's timeout filter promises too."""

    def __init__(self, resolution: float = 0.25) -> None:
        self.resolution = resolution
        self._deadlines: dict[asyncio.Task[Any], float] = {}
        self.expired: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    def track(self, task: asyncio.Task[Any], seconds: float) -> None:
        self._deadlines[task] = time.monotonic() + seconds
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def untrack(self, task: asyncio.Task[Any]) -> bool:
        """Stop tracking; True when the task was cancelled for running out of time."""
        self._deadlines.pop(task, None)
        if task in self.expired:
            self.expired.discard(task)
            return True
        return False

    async def _sweep(self) -> None:
        while self._deadlines:
            await asyncio.sleep(self.resolution)
            now = time.monotonic()
            for task, deadline in list(self._deadlines.items()):
                if deadline <= now and task not in self.expired:
                    self.expired.add(task)
                    task.cancel()


_EXTRA_PREFIX = "impersonate-extra-"


def _extra_key(encoded: str) -> str:
    """An Impersonate-Extra- header's key, percent-decoded (left as it is when that fails, as upstream)."""
    try:
        return unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        return encoded


def _go_struct(*fields: str) -> str:
    return "{" + " ".join(fields) + "}"


def impersonate(request: web.Request, authorizer: Authorizer) -> errors.StatusError | None:
    """Act as the user the Impersonate-* headers name, when the real user may impersonate each part of it
    (verb `impersonate` on users, serviceaccounts, groups, userextras/<key>, uids), as upstream's
    WithImpersonation; the headers are then dropped."""
    headers = request.headers
    real: UserInfo = request["user"]
    as_user = headers.get("Impersonate-User", "")
    as_groups = headers.getall("Impersonate-Group", [])
    as_uid = headers.get("Impersonate-Uid", "")
    extras: dict[str, list[str]] = {}
    for name, value in headers.items():
        if name.lower().startswith(_EXTRA_PREFIX):
            extras.setdefault(_extra_key(name[len(_EXTRA_PREFIX) :].lower()), []).append(value)
    # (kind, namespace, name, extra key): what is asked for, in upstream's order
    asked: list[tuple[str, str, str, str]] = []
    sa: tuple[str, str] | None = None
    if as_user:
        try:
            sa = split_username(as_user)
        except InvalidUsername:
            asked.append(("User", "", as_user, ""))
        else:
            asked.append(("ServiceAccount", sa[0], sa[1], ""))
    asked += [("Group", "", g, "") for g in as_groups]
    for key, values in extras.items():
        asked += [("UserExtra", "", v, key) for v in values]
    if as_uid:
        asked.append(("UID", "", as_uid, ""))
    if not asked:
        return None
    if not as_user:
        refs = [_go_struct(kind, ns, name, "", "" if kind in ("Group", "User") else "authentication.k8s.io/v1", "",
                           key) for kind, ns, name, key in asked]  # fmt: skip
        uri = request.raw_path
        return errors.internal_error(
            f'Internal Server Error: "{uri}": requested [{" ".join(refs)}] without impersonating a user'
        )
    groups: list[str] = []
    for kind, ns, name, key in asked:
        group, version, resource, sub = "", "v1", "", ""
        if kind == "ServiceAccount":
            resource = "serviceaccounts"
            if not as_groups:
                groups += ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
        elif kind == "User":
            resource = "users"
        elif kind == "Group":
            resource = "groups"
            groups.append(name)
        elif kind == "UserExtra":
            group, version, resource, sub = "authentication.k8s.io", "v1", "userextras", key
        else:
            group, version, resource = "authentication.k8s.io", "v1", "uids"
        a = Attributes(real, "impersonate", True, ns, group, version, resource, sub, name)
        d = authorizer.authorize(a)
        if not d.allowed:
            return forbidden(a, d.reason)
    name = make_username(*sa) if sa else as_user
    if name != ANONYMOUS:
        if AUTHENTICATED_GROUP not in groups and UNAUTHENTICATED_GROUP not in groups:
            groups.append(AUTHENTICATED_GROUP)
    elif UNAUTHENTICATED_GROUP not in groups:
        groups.append(UNAUTHENTICATED_GROUP)
    request["user"] = UserInfo(name, as_uid, tuple(groups), {k: tuple(v) for k, v in extras.items()})
    request["impersonator"] = real
    return None


def inflight_limits(cfg: ChainConfig) -> dict[str, InflightLimit]:
    """The seats for read-only and mutating requests (inflight.py), shared by all of a server's listeners."""
    wait = cfg.request_timeout * WAIT_FRACTION
    return {
        "readOnly": InflightLimit(cfg.max_requests_inflight, wait_limit=wait),
        "mutating": InflightLimit(cfg.max_mutating_requests_inflight, wait_limit=wait),
    }


def build_middlewares(cfg: ChainConfig, limits: dict[str, InflightLimit]) -> list[Any]:
    """The chain as one aiohttp middleware (nested middlewares cost a coroutine each per request); the
    filters run in upstream's order. `limits` are the in-flight limits by kind (`inflight_limits`)."""

    def authentication(request: web.Request) -> errors.StatusError | Awaitable[errors.StatusError | None] | None:
        try:
            user = deferred.call(cfg.authenticator.authenticate, _Credentials(request))
        except InvalidCredentials:
            return errors.unauthorized()
        if isinstance(user, deferred.Deferred):  # a token webhook is asked first
            return authenticate_later(request, user)
        return authenticated(request, user)

    async def authenticate_later(
        request: web.Request, pending: deferred.Deferred[UserInfo | None]
    ) -> errors.StatusError | None:
        try:
            user = await pending
        except InvalidCredentials:
            return errors.unauthorized()
        return authenticated(request, user)

    def authenticated(request: web.Request, user: UserInfo | None) -> errors.StatusError | None:
        if user is None:
            return errors.unauthorized()
        if user.anonymous and cfg.anonymous_is_admin:
            user = UserInfo("system:admin", groups=("system:masters", AUTHENTICATED_GROUP))
        request["user"] = user
        return None

    auditor = cfg.auditor

    def audit(request: web.Request) -> errors.StatusError | None:
        if auditor is not None:
            request["audit"] = auditor.begin(request, request["info"], request["user"], request["received"])
        return None

    def impersonation(request: web.Request) -> errors.StatusError | Awaitable[errors.StatusError | None] | None:
        headers = request.headers
        # (header names arrive lower-cased over HTTP/2)
        if "Impersonate-User" not in headers and not any(h[:12].lower() == "impersonate-" for h in headers):
            return None
        refused = deferred.call(impersonate, request, cfg.authorizer)
        if isinstance(refused, deferred.Deferred):  # an authorization webhook is asked first
            return impersonate_later(request, refused)
        return impersonated(request, refused)

    async def impersonate_later(
        request: web.Request, pending: deferred.Deferred[errors.StatusError | None]
    ) -> errors.StatusError | None:
        return impersonated(request, await pending)

    def impersonated(request: web.Request, refused: errors.StatusError | None) -> errors.StatusError | None:
        ev = request.get("audit")
        if refused is None and ev is not None and auditor is not None:
            auditor.impersonated(ev, request["user"])
        return refused

    def authorization(request: web.Request) -> errors.StatusError | Awaitable[errors.StatusError | None] | None:
        a = attributes_of(request["info"], request["user"], request.query)
        d = deferred.call(cfg.authorizer.authorize, a)
        if isinstance(d, deferred.Deferred):  # an authorization webhook is asked first
            return authorize_later(request, a, d)
        return authorized(request, a, d)

    async def authorize_later(
        request: web.Request, a: Attributes, pending: deferred.Deferred[Decision]
    ) -> errors.StatusError | None:
        return authorized(request, a, await pending)

    def authorized(request: web.Request, a: Attributes, d: Decision) -> errors.StatusError | None:
        ev = request.get("audit")
        if ev is not None:
            ev.annotate(DECISION_ANNOTATION, "allow" if d.allowed else "forbid")
            ev.annotate(REASON_ANNOTATION, d.reason)
        if d.allowed:
            return None
        if d.error and d.decision != "Deny" and not d.reason:
            return errors.internal_error(d.error)
        return forbidden(a, d.reason)

    filters = (authentication, audit, impersonation, authorization) if auditor is not None else (
        authentication, impersonation, authorization)  # fmt: skip
    deadlines = RequestDeadlines()

    async def limited(request: web.Request, handler: Handler) -> web.StreamResponse:
        """In-flight limit, then the request deadline, around the handler."""
        info = request["info"]
        if info.is_long_running:
            return await handler(request)
        deadline = cfg.request_timeout
        raw = request.query.get("timeout")
        if raw:
            t = _parse_timeout(raw)
            if t is None:
                raise errors.bad_request(f"invalid timeout specified in the request URL: {raw}")
            deadline = min(deadline, t) if t > 0 else deadline
        seats = limits["mutating" if info.is_mutating else "readOnly"]
        if not await seats.acquire():
            raise errors.too_many_requests("Too many requests, please try again later.", 1)
        task = asyncio.current_task()
        assert task is not None
        deadlines.track(task, deadline)
        timed_out = False
        try:
            return await handler(request)
        except asyncio.CancelledError:
            timed_out = deadlines.untrack(task)
            if timed_out:
                task.uncancel()
                raise errors.timeout("request did not complete within the allotted timeout", 0) from None
            raise
        finally:
            if not timed_out:
                deadlines.untrack(task)
            seats.release()

    @web.middleware
    async def chain(request: web.Request, handler: Handler) -> web.StreamResponse:
        start = time.perf_counter()
        code = 500
        resp: web.StreamResponse | None = None
        status: dict[str, Any] | None = None
        begin_request()
        if auditor is not None:
            request["received"] = time.time()
        try:  # panic recovery
            request["info"] = request_info(request.method, request.raw_path, request.query)  # type: ignore[arg-type]
            for f in filters:
                refused = f(request)
                if refused is not None and not isinstance(refused, errors.StatusError):
                    refused = await refused  # a webhook had to be asked
                if refused is not None:
                    code = refused.code
                    if auditor is not None:
                        status = refused.status()
                        if f is authentication:
                            auditor.failed_authentication(request, request["info"], request["received"])
                    return status_response(refused, request.headers.get("Accept"))
            ev = request.get("audit") if auditor is not None else None
            if ev is not None and request["info"].is_long_running:
                auditor.started(ev, 200)  # type: ignore[union-attr]
            resp = await limited(request, handler)
            code = resp.status
            return resp
        except errors.StatusError as err:
            code = err.code
            if auditor is not None:
                status = err.status()
            return status_response(err, request.headers.get("Accept"))
        except web.HTTPException:
            raise
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as err:  # never a traceback to the client, never a dead server
            # The traceback goes to the log; the client learns that it was the server's fault, not how.
            log.exception("panic serving %s %s: %s", request.method, request.path_qs, type(err).__name__)
            ev = request.get("audit") if auditor is not None else None
            if ev is not None:
                auditor.panic(ev, type(err).__name__)  # type: ignore[union-attr]
                request["audit"] = None
            return status_response(errors.internal_error(PANIC_MESSAGE), request.headers.get("Accept"))
        finally:
            if auditor is not None:
                ev = request.get("audit")
                if ev is not None:
                    for key, value in take_audit_annotations().items():
                        ev.annotate(key, value)
                    auditor.complete(ev, code, resp, status, request["info"].is_long_running)
            if cfg.on_request_done is not None:
                cfg.on_request_done(request, code, time.perf_counter() - start)

    return [chain]
