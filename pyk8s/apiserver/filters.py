"""The handler chain, in kube-apiserver's order (upstream: apiserver/pkg/server/config.go
DefaultBuildHandlerChain): panic recovery → request info → authentication → audit → impersonation →
authorization → in-flight limit → timeout → handler. The filters run as one function around the handler (an
aiohttp middleware in shape, which the server calls itself); later issues plug RBAC, audit policies and
priority-and-fairness into the same places."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..api import errors
from .authn import AUTHENTICATED_GROUP, InvalidCredentials, Union, UserInfo, peer_certificate_of
from .encoding import status_response
from .inflight import WAIT_FRACTION, InflightLimit
from .request_info import request_info

log = logging.getLogger("pyk8s.apiserver")

PANIC_MESSAGE = "the server could not serve this request; the error is in the API server's log"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")
_TIMEOUT_PARAM = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s|m|h)?$")
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


@dataclass
class ChainConfig:
    authenticator: Union
    anonymous_is_admin: bool = False  # the insecure port: everyone is the admin, as upstream's was
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    audit: list[Callable[[web.Request, UserInfo], None]] = field(default_factory=list)
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
    m = _TIMEOUT_PARAM.match(raw.strip())
    if not m:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)]


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

    def authentication(request: web.Request) -> errors.StatusError | None:
        try:
            user = cfg.authenticator.authenticate(_Credentials(request))
        except InvalidCredentials:
            return errors.unauthorized()
        if user is None:
            return errors.unauthorized()
        if user.anonymous and cfg.anonymous_is_admin:
            user = UserInfo("system:admin", groups=("system:masters", AUTHENTICATED_GROUP))
        request["user"] = user
        return None

    def audit(request: web.Request) -> errors.StatusError | None:
        for hook in cfg.audit:
            hook(request, request["user"])
        return None

    def impersonation(request: web.Request) -> errors.StatusError | None:
        headers = request.headers
        if "Impersonate-User" not in headers and "Impersonate-Group" not in headers:
            return None
        as_user = headers.get("Impersonate-User")
        as_groups = headers.getall("Impersonate-Group", [])
        user: UserInfo = request["user"]
        if "system:masters" not in user.groups:
            return errors.forbidden_request(
                "users",
                as_user or "",
                f'User "{user.name}" cannot impersonate resource "users" in API group "" at the cluster scope',
            )
        if not as_user:
            return errors.bad_request("requested impersonation of groups without a user")
        request["user"] = UserInfo(as_user, groups=(*as_groups, AUTHENTICATED_GROUP))
        return None

    def authorization(request: web.Request) -> errors.StatusError | None:
        user: UserInfo = request["user"]
        if user.anonymous and request.path not in PUBLIC_PATHS and not request.path.startswith(PUBLIC_PATHS[1:]):
            # Anonymous requests may only read the public endpoints (upstream: system:public-info-viewer).
            return errors.unauthorized()
        return None

    filters = (authentication, audit, impersonation, authorization)
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
        try:  # panic recovery
            request["info"] = request_info(request.method, request.raw_path, request.query)  # type: ignore[arg-type]
            for f in filters:
                refused = f(request)
                if refused is not None:
                    code = refused.code
                    return status_response(refused, request.headers.get("Accept"))
            resp = await limited(request, handler)
            code = resp.status
            return resp
        except errors.StatusError as err:
            code = err.code
            return status_response(err, request.headers.get("Accept"))
        except web.HTTPException:
            raise
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as err:  # never a traceback to the client, never a dead server
            # The traceback goes to the log; the client learns that it was the server's fault, not how.
            log.exception("panic serving %s %s: %s", request.method, request.path_qs, type(err).__name__)
            return status_response(errors.internal_error(PANIC_MESSAGE), request.headers.get("Accept"))
        finally:
            if cfg.on_request_done is not None:
                cfg.on_request_done(request, code, time.perf_counter() - start)

    return [chain]
