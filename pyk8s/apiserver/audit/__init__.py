"""Auditing: a record of who did what, as kube-apiserver keeps it (upstream: apiserver/pkg/audit and the
WithAudit / WithFailedAuthenticationAudit filters). Off unless `--audit-policy-file` and a backend are given.

For each request the policy (policy.py) picks a level from the authenticated user and the request's
attributes; at level None nothing is recorded. Otherwise an audit.k8s.io/v1 Event is built and written at each
stage the policy does not omit: RequestReceived when the request comes in, ResponseStarted when a long-running
request (a watch, logs, exec) starts answering, ResponseComplete when the answer is done, Panic when the
handler failed. Metadata level records the user, verb, object reference and response status; Request adds the
request body; RequestResponse the response body too.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ...api.meta import rfc3339_micro
from ..authn import UserInfo
from ..authz import attributes_of
from ..request_info import RequestInfo
from .log_backend import LogBackend, LogOptions
from .policy import (
    NONE,
    PANIC,
    RANK,
    REQUEST,
    REQUEST_RECEIVED,
    REQUEST_RESPONSE,
    RESPONSE_COMPLETE,
    RESPONSE_STARTED,
    Policy,
    RequestAuditConfig,
    load_policy,
)
from .webhook_backend import UnionBackend, WebhookBackend, WebhookOptions

__all__ = [
    "AuditEvent", "Auditor", "LogBackend", "LogOptions", "Policy", "UnionBackend", "WebhookBackend", "WebhookOptions",
    "load_policy",
]  # fmt: skip

MAX_USER_AGENT = 1024
DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"


def _micro(t: float) -> str:
    import datetime as dt

    return rfc3339_micro(dt.datetime.fromtimestamp(t, dt.UTC))


def user_info(user: UserInfo) -> dict[str, Any]:
    """An authentication.k8s.io/v1 UserInfo as the event writes it (empty fields left out)."""
    out: dict[str, Any] = {"username": user.name} if user.name else {}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def source_ips(request: web.BaseRequest) -> list[str]:
    """The client's addresses as upstream's utilnet.SourceIPs lists them: X-Forwarded-For, X-Real-Ip, then
    the connection's peer, each once."""
    ips: list[str] = []
    for part in request.headers.get("X-Forwarded-For", "").split(","):
        if part.strip():
            ips.append(part.strip())
    real = request.headers.get("X-Real-Ip", "").strip()
    if real and real not in ips:
        ips.append(real)
    peer = request.remote or ""
    if peer and peer not in ips:
        ips.append(peer)
    return ips


def auth_methods(request: web.BaseRequest) -> str:
    """What a request that failed authentication tried (upstream's getAuthMethods)."""
    methods: list[str] = []
    auth = request.headers.get("Authorization", "").strip()
    scheme = auth.split(" ", 1)[0].lower() if " " in auth else ""
    if scheme == "basic":
        methods.append("basic")
    if scheme == "bearer":
        methods.append("bearer")
    if request.query.get("access_token", "").strip():
        methods.append("access_token")
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if ssl_object is not None and ssl_object.getpeercert():
        methods.append("x509")
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


@dataclass
class AuditEvent:
    """One request's event while the request runs."""

    config: RequestAuditConfig
    event: dict[str, Any]
    annotations: dict[str, str] = field(default_factory=dict)
    request_object: Any = None
    response_started: bool = False

    @property
    def level(self) -> str:
        return self.config.level

    def annotate(self, key: str, value: str) -> None:
        self.annotations.setdefault(key, value)

    def record_body(self, data: bytes, content_type: str | None) -> None:
        """The request body, kept at level Request and above (what upstream's LogRequestObject logs)."""
        if RANK[self.level] < RANK[REQUEST] or not data:
            return
        parsed = _parse(data, content_type)
        if isinstance(parsed, dict):
            md = parsed.get("metadata")
            ref = self.event.get("objectRef")
            if ref is not None and isinstance(md, dict):
                for key in ("namespace", "name"):
                    if not ref.get(key) and isinstance(md.get(key), str) and md[key]:
                        ref[key] = md[key]
            if self.config.omit_managed_fields and isinstance(md, dict):
                md.pop("managedFields", None)
        self.request_object = parsed


def _parse(data: bytes, content_type: str | None) -> Any:
    from ..encoding import decode

    try:
        doc, _ = decode(data, content_type)
    except Exception:  # a body the handler refuses is audited without it
        return None
    return doc


class Auditor:
    """The policy and the backend, as the handler chain uses them."""

    def __init__(self, policy: Policy, backend: LogBackend | UnionBackend | WebhookBackend) -> None:
        self.policy = policy
        self.backend = backend

    def begin(
        self,
        request: web.BaseRequest,
        info: RequestInfo,
        user: UserInfo | None,
        received: float,
        *,
        received_stage: bool = True,
    ) -> AuditEvent | None:
        """The event of a request (None when its level is None), its RequestReceived stage written."""
        a = attributes_of(info, user or UserInfo(""))
        config = self.policy.evaluate(a)
        if config.level == NONE:
            return None
        ua = request.headers.get("User-Agent", "")
        if len(ua) > MAX_USER_AGENT:
            ua = ua[:MAX_USER_AGENT] + "...TRUNCATED"
        ev: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": config.level,
            "auditID": str(uuid.uuid4()),
            "stage": REQUEST_RECEIVED,
            "requestURI": request.raw_path,
            "verb": info.verb,
            "user": user_info(user) if user is not None else {},
            "sourceIPs": source_ips(request),
            "userAgent": ua,
        }
        if info.is_resource_request:
            ref = {"resource": info.resource, "namespace": info.namespace, "name": info.name,
                   "apiGroup": info.api_group, "apiVersion": info.api_version, "subresource": info.subresource}  # fmt: skip
            ev["objectRef"] = {k: v for k, v in ref.items() if v}
        ev["requestReceivedTimestamp"] = _micro(received)
        e = AuditEvent(config, ev)
        if received_stage:
            self._emit(e, REQUEST_RECEIVED, received)
        return e

    def failed_authentication(self, request: web.BaseRequest, info: RequestInfo, received: float) -> None:
        """A request refused at authentication: one ResponseStarted event with the methods it tried."""
        e = self.begin(request, info, None, received, received_stage=False)
        if e is None:
            return
        e.event["responseStatus"] = {"metadata": {}, "message": auth_methods(request), "code": 401}
        self._emit(e, RESPONSE_STARTED)

    def impersonated(self, e: AuditEvent, user: UserInfo) -> None:
        e.event["impersonatedUser"] = user_info(user)

    def started(self, e: AuditEvent, code: int) -> None:
        """A long-running request has begun answering."""
        if e.response_started:
            return
        e.response_started = True
        e.event["responseStatus"] = {"metadata": {}, "code": code}
        self._emit(e, RESPONSE_STARTED)

    def complete(self, e: AuditEvent, code: int, response: web.StreamResponse | None, status: dict[str, Any] | None,
                 long_running: bool = False) -> None:  # fmt: skip
        if status is not None:
            e.event["responseStatus"] = {"metadata": {}, **{k: status[k] for k in
                                         ("status", "message", "reason", "details", "code") if k in status}}  # fmt: skip
        else:
            e.event["responseStatus"] = {"metadata": {}, "code": code}
        if long_running and not e.response_started:
            self.started(e, code)
        if e.level == REQUEST_RESPONSE and isinstance(response, web.Response) and response.body is not None:
            body = response.body
            if isinstance(body, bytes | bytearray):
                parsed = _parse(bytes(body), response.content_type)
                if e.config.omit_managed_fields and isinstance(parsed, dict):
                    (parsed.get("metadata") or {}).pop("managedFields", None)
                if parsed is not None:
                    e.event["responseObject"] = parsed
                    if isinstance(parsed, dict) and parsed.get("kind") == "Status" and status is None:
                        e.event["responseStatus"] = {"metadata": {}, **{k: parsed[k] for k in
                                                     ("status", "message", "reason", "details", "code") if k in parsed}}  # fmt: skip
        self._emit(e, RESPONSE_COMPLETE)

    def panic(self, e: AuditEvent, message: str) -> None:
        e.event["responseStatus"] = {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {message}",
                                     "reason": "InternalError", "code": 500}  # fmt: skip
        self._emit(e, PANIC)

    def _emit(self, e: AuditEvent, stage: str, at: float | None = None) -> None:
        if stage in e.config.omit_stages:
            return
        ev = dict(e.event)
        ev["stage"] = stage
        if e.request_object is not None and RANK[e.level] >= RANK[REQUEST]:
            ev["requestObject"] = e.request_object
        ordered = {k: ev[k] for k in _ORDER if k in ev}
        ordered["stageTimestamp"] = _micro(at if at is not None else time.time())
        if e.annotations:
            ordered["annotations"] = dict(e.annotations)
        self.backend.process(ordered)

    async def shutdown(self) -> None:
        """Deliver what the backends still hold (the webhook's batch), then close them."""
        shutdown = getattr(self.backend, "shutdown", None)
        if shutdown is not None:
            await shutdown()
        self.close()

    def close(self) -> None:
        self.backend.close()


# The Event's fields in the order upstream's JSON writes them (stageTimestamp and annotations are added last).
_ORDER = ("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "impersonatedUser",
          "sourceIPs", "userAgent", "objectRef", "responseStatus", "requestObject", "responseObject",
          "requestReceivedTimestamp")  # fmt: skip
