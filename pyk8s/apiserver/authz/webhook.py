"""The Webhook authorization mode: each question is a SubjectAccessReview POSTed to a remote service, which
answers allowed, denied or neither (upstream: apiserver plugin/pkg/authorizer/webhook, configured by
kube-apiserver's `--authorization-webhook-*` flags as its legacy-flag AuthorizerConfiguration).

- The review carries the request's attributes: resourceAttributes (with the list's field and label selector
  requirements, as v1.32 sends them: `=`/`==`/`in` as In, `!=`/`notin` as NotIn, label `exists`/`!` as
  Exists/DoesNotExist, other operators left out) or nonResourceAttributes, and the user, groups, extra and uid.
  `--authorization-webhook-version` v1beta1 (upstream's default) names the groups `group`, v1 `groups`.
- Answers are cached by the review's spec: allowed ones for `--authorization-webhook-cache-authorized-ttl`
  (5m), the others for `--authorization-webhook-cache-unauthorized-ttl` (30s), at most 8192 of them; a
  question whose attributes are too long to cache safely is always asked.
- A call that fails (the webhook is down, answers 500, or something that is not a SubjectAccessReview) is
  retried as upstream does (500/504/429, connection resets, Retry-After: 5 tries from 0.5 s, x1.5) and then is
  the failure policy's NoOpinion with the error recorded: a later authorizer may still allow the request;
  if none does, the request fails with that error.

The call itself goes through `deferred`: `authorize` stays synchronous, and raises `Pending` when it has to
ask the webhook (see pyk8s.apiserver.deferred).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from ...api import errors
from ...api.selectors import DOES_NOT_EXIST, EQUALS, EXISTS, IN, NOT_EQUALS, NOT_IN
from .. import deferred
from ..webhook import (
    DEFAULT_RETRY_BACKOFF,
    Backoff,
    CallError,
    SetupError,
    WebhookClient,
    decode_object,
    json_kind,
    with_exponential_backoff,
)
from . import ALLOW, DENY, NO_OPINION, Attributes, Decision, Rules

log = logging.getLogger("pyk8s.apiserver.authz.webhook")

GROUP = "authorization.k8s.io"
VERSIONS = ("v1", "v1beta1")
DEFAULT_VERSION = "v1beta1"  # upstream's default for --authorization-webhook-version
AUTHORIZED_TTL = 300.0
UNAUTHORIZED_TTL = 30.0
TIMEOUT = 30.0  # what kube-apiserver sets for the legacy flags' webhook
CACHE_SIZE = 8192
# Requests whose requester-controlled attributes are this long or longer are never cached (a DoS guard).
MAX_CONTROLLED_ATTR_CACHE_SIZE = 10000
RULES_ERROR = "webhook authorizer does not support user rule resolution"
BOTH_ERROR = "webhook subject access review returned both allow and deny response"
CANNOT_ASK = "the authorization webhook cannot be asked from here"

_FIELD_OPERATORS = {EQUALS: "In", NOT_EQUALS: "NotIn"}
_LABEL_OPERATORS = {EQUALS: "In", IN: "In", NOT_EQUALS: "NotIn", NOT_IN: "NotIn", EXISTS: "Exists",
                    DOES_NOT_EXIST: "DoesNotExist"}  # fmt: skip


@dataclass
class WebhookOptions:
    """`--authorization-webhook-config-file`, `-version`, `-cache-authorized-ttl`, `-cache-unauthorized-ttl`."""

    config_file: str = ""
    version: str = DEFAULT_VERSION
    cache_authorized_ttl: float = AUTHORIZED_TTL
    cache_unauthorized_ttl: float = UNAUTHORIZED_TTL

    def validate(self) -> list[str]:
        """Upstream's messages for a version it does not speak or a config file that cannot be used."""
        if self.version not in VERSIONS:
            return [f"unsupported webhook authorizer version {errors.go_quote(self.version)}, supported versions "
                    f"are {errors.go_quote(VERSIONS[0])}, {errors.go_quote(VERSIONS[1])}"]  # fmt: skip
        if self.config_file:
            try:
                WebhookClient.from_kubeconfig(self.config_file)
            except SetupError as err:
                return [str(err)]
        return []


@dataclass(frozen=True)
class _Result:
    """One review's outcome: the answer's status, or why there is none."""

    status: dict[str, Any] | None
    error: str = ""


class WebhookAuthorizer:
    """Asks the webhook a kubeconfig file names; see the module docstring."""

    def __init__(
        self,
        client: WebhookClient,
        version: str = DEFAULT_VERSION,
        authorized_ttl: float = AUTHORIZED_TTL,
        unauthorized_ttl: float = UNAUTHORIZED_TTL,
        backoff: Backoff = DEFAULT_RETRY_BACKOFF,
    ) -> None:
        if version not in VERSIONS:
            raise SetupError(WebhookOptions(version=version).validate()[0])
        self.client = client
        self.version = version
        self.api_version = f"{GROUP}/{version}"
        self.authorized_ttl = authorized_ttl
        self.unauthorized_ttl = unauthorized_ttl
        self.backoff = backoff
        self._cache: OrderedDict[bytes, tuple[float, dict[str, Any]]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Task[_Result]] = {}

    @classmethod
    def from_options(cls, opts: WebhookOptions) -> WebhookAuthorizer:
        client = WebhookClient.from_kubeconfig(opts.config_file, timeout=TIMEOUT)
        return cls(client, opts.version, opts.cache_authorized_ttl, opts.cache_unauthorized_ttl)

    async def run(self) -> None:
        """Hold the webhook's connections until cancelled (the server's shutdown), then close them."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.client.close()

    # -- the decision --------------------------------------------------------------------------------------------

    def authorize(self, a: Attributes) -> Decision:
        spec = review_spec(a, self.version)
        key = orjson.dumps(spec)
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                self._cache.move_to_end(key)
                return decision_of(hit[1])
            del self._cache[key]
        found, result = deferred.answer((id(self), key))
        if not found:
            if not deferred.deferrable():
                return Decision(NO_OPINION, "", CANNOT_ASK)
            raise deferred.Pending((id(self), key), lambda: self._fetch(spec, key, should_cache(a)))
        if result.status is None:
            return Decision(NO_OPINION, "", result.error)
        return decision_of(result.status)

    def rules_for(self, user: Any, namespace: str) -> Rules:
        return Rules(incomplete=True, error=RULES_ERROR)

    # -- the call ------------------------------------------------------------------------------------------------

    async def _fetch(self, spec: dict[str, Any], key: bytes, cacheable: bool) -> _Result:
        """The review's outcome; requests asking the same question at once share one call, which goes on even
        if the request that started it is cancelled."""
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._review(spec, key, cacheable))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _review(self, spec: dict[str, Any], key: bytes, cacheable: bool) -> _Result:
        body = {"kind": "SubjectAccessReview", "apiVersion": self.api_version,
                "metadata": {"creationTimestamp": None}, "spec": spec, "status": {"allowed": False}}  # fmt: skip

        async def once() -> dict[str, Any]:
            answer = await self.client.post_json(body)
            return decode_object(answer, self.api_version, "SubjectAccessReview", VERSIONS)

        try:
            doc = await with_exponential_backoff(self.backoff, once)
            status = _status_of(doc, self.version)
        except CallError as err:
            log.error("Failed to make webhook authorizer request: %s", err)
            return _Result(None, str(err))
        if cacheable:
            ttl = self.authorized_ttl if status.get("allowed") else self.unauthorized_ttl
            if ttl > 0:
                self._cache[key] = (time.monotonic() + ttl, status)
                self._cache.move_to_end(key)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return _Result(status)


def decision_of(status: dict[str, Any]) -> Decision:
    """A SubjectAccessReview status as a decision (both allowed and denied: denied, with an error)."""
    allowed, denied, reason = bool(status.get("allowed")), bool(status.get("denied")), str(status.get("reason") or "")
    if denied and allowed:
        return Decision(DENY, reason, BOTH_ERROR)
    if denied:
        return Decision(DENY, reason)
    if allowed:
        return Decision(ALLOW, reason)
    return Decision(NO_OPINION, reason)


def should_cache(a: Attributes) -> bool:
    size = (len(a.namespace) + len(a.verb) + len(a.api_group) + len(a.api_version) + len(a.resource)
            + len(a.subresource) + len(a.name) + len(a.path))  # fmt: skip
    return size < MAX_CONTROLLED_ATTR_CACHE_SIZE


def review_spec(a: Attributes, version: str) -> dict[str, Any]:
    """The SubjectAccessReview spec for a question, in the fields and order Go encodes it (empty fields left
    out)."""
    spec: dict[str, Any] = {}
    if a.resource_request:
        res: dict[str, Any] = {}
        for name, value in (("namespace", a.namespace), ("verb", a.verb), ("group", a.api_group),
                            ("version", a.api_version), ("resource", a.resource), ("subresource", a.subresource),
                            ("name", a.name)):  # fmt: skip
            if value:
                res[name] = value
        # (in the order of the selector's terms as text, which is how upstream's parser leaves them)
        terms = sorted(a.field_selector, key=lambda r: f"{r.field}{r.op}{r.value}")
        fields = [{"key": r.field, "operator": _FIELD_OPERATORS[r.op], "values": [r.value]}
                  for r in terms if r.op in _FIELD_OPERATORS]  # fmt: skip
        if fields:
            res["fieldSelector"] = {"requirements": fields}
        labels = []
        for r in a.label_selector:
            op = _LABEL_OPERATORS.get(r.op)
            if op is not None:
                labels.append({"key": r.key, "operator": op, **({"values": list(r.values)} if r.values else {})})
        if labels:
            res["labelSelector"] = {"requirements": labels}
        spec["resourceAttributes"] = res
    else:
        non = {name: value for name, value in (("path", a.path), ("verb", a.verb)) if value}
        spec["nonResourceAttributes"] = non
    user = a.user
    if user.name:
        spec["user"] = user.name
    if user.groups:
        spec["groups" if version == "v1" else "group"] = list(user.groups)
    if user.extra:
        spec["extra"] = {k: list(user.extra[k]) for k in sorted(user.extra)}
    if user.uid:
        spec["uid"] = user.uid
    return spec


_STATUS_TYPES = {"allowed": (bool, "bool"), "denied": (bool, "bool"), "reason": (str, "string"),
                 "evaluationError": (str, "string")}  # fmt: skip


def _status_of(doc: dict[str, Any], version: str) -> dict[str, Any]:
    """The answer's status, failing as Go's decoder would on a field of the wrong type."""
    status = doc.get("status")
    if status is None:
        return {}
    if not isinstance(status, dict):
        raise CallError(f"json: cannot unmarshal {json_kind(status)} into Go struct field SubjectAccessReview.status "
                        f"of type {version}.SubjectAccessReviewStatus")  # fmt: skip
    for name, value in status.items():
        expected = _STATUS_TYPES.get(name)
        if expected is not None and value is not None and not isinstance(value, expected[0]):
            raise CallError(f"json: cannot unmarshal {json_kind(value)} into Go struct field "
                            f"SubjectAccessReviewStatus.status.{name} of type {expected[1]}")  # fmt: skip
    return status
