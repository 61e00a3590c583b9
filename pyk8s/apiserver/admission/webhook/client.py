"""The HTTPS call to an admission webhook: the API server's shared webhook client (pyk8s.apiserver.webhook: a URL,
or a Service through the API server's service resolver; TLS verified against the caBundle; client-go's error
texts), with an AdmissionReview in and out (upstream: apiserver pkg/util/webhook client.go, and client-go's
Request.Do().Into() for the answer).

The deadline is the webhook's timeoutSeconds, sent along as `?timeout=<n>s` as upstream does; it is the request
context's deadline, which Go reports as a bare `context deadline exceeded`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ....api.errors import go_quote
from ....api.meta import parse_group_version
from ... import webhook
from ...webhook import FIND_KIND_TYPE, SCHEME_NAME, UNVERSIONED_KINDS, Answer, CallError, json_kind
from .request import GROUP, KNOWN_VERSIONS

ServiceResolver = webhook.ServiceResolver


class ClientError(Exception):
    """The call failed; `str()` is client-go's error text (what follows `failed to call webhook: `)."""


class SetupError(Exception):
    """No client can be built from the clientConfig (a caBundle that does not load)."""


class AdmissionClient:
    """POSTs AdmissionReviews to one webhook over a keep-alive session."""

    def __init__(
        self, client_config: dict[str, Any], webhook_name: str, timeout: float, resolver: ServiceResolver | None
    ) -> None:
        try:
            self.client = webhook.WebhookClient(client_config, webhook_name, service_resolver=resolver,
                                                timeout=timeout, context_deadline=True)  # fmt: skip
        except webhook.SetupError as err:
            raise SetupError(str(err)) from None

    async def review(self, review: dict[str, Any], version: str) -> dict[str, Any]:
        """POST the review and return the decoded answer; ClientError otherwise."""
        try:
            answer = await self.client.post_json(review)
            return decode_admission_review(answer, version)
        except CallError as err:
            raise ClientError(str(err)) from None

    async def close(self) -> None:
        await self.client.close()


def decode_admission_review(answer: Answer, version: str) -> dict[str, Any]:
    """The answer decoded as client-go decodes into an AdmissionReview of `version`; CallError otherwise.
    An answer without apiVersion or kind decodes (the response check refuses it later, as upstream's does)."""
    status, body = answer.status, answer.body
    if not 200 <= status <= 206:
        raise webhook.error_answer(status, answer.content_type, body, answer.retry_after)
    if not body:
        raise CallError(
            f"0-length response with status code: {status} and content type: {answer.content_type or 'application/json'}"
        )
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise CallError(
            f"couldn't get version/kind; json parse error: {webhook.go_json_syntax_error(exc, body)}"
        ) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        why = f"json: cannot unmarshal {json_kind(doc)} into Go value of type {FIND_KIND_TYPE}"
        raise CallError(f"couldn't get version/kind; json parse error: {why}")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str | None) or not isinstance(kind, str | None):
        bad = "apiVersion" if not isinstance(api_version, str | None) else "kind"
        why = f"json: cannot unmarshal {json_kind(doc[bad])} into Go struct field .{bad} of type string"
        raise CallError(f"couldn't get version/kind; json parse error: {why}")
    if not api_version or not kind:
        return doc
    try:
        group, got_version = parse_group_version(api_version)
    except ValueError as err:
        raise CallError(str(err)) from None
    if (group, got_version, kind) == (GROUP, version, "AdmissionReview"):
        if not isinstance(doc.get("response"), dict | None):
            why = f"json: cannot unmarshal {json_kind(doc['response'])} into Go struct field AdmissionReview.response of type {version}.AdmissionResponse"
            raise CallError(why)
        return doc
    if group == GROUP and got_version in KNOWN_VERSIONS and kind == "AdmissionReview":
        raise CallError(
            f"converting ({got_version}.AdmissionReview) to ({version}.AdmissionReview): unknown conversion"
        )
    if kind in UNVERSIONED_KINDS:
        raise CallError(f"converting (v1.{kind}) to ({version}.AdmissionReview): unknown conversion")
    raise CallError(
        f"no kind {go_quote(kind)} is registered for version {go_quote(api_version)} in scheme {go_quote(SCHEME_NAME)}"
    )
