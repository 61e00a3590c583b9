"""The HTTPS call to an admission webhook: the same client the API server calls conversion webhooks with (a
URL, or a Service through the API server's service resolver; TLS verified against the caBundle; client-go's
error texts), with an AdmissionReview in and out (upstream: apiserver pkg/util/webhook client.go, and
client-go's Request.Do().Into() for the answer).

The deadline is the webhook's timeoutSeconds, sent along as `?timeout=<n>s` as upstream does.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from ....api.errors import go_quote
from ....apiextensions import conversion_webhook as cw
from .request import GROUP, KNOWN_VERSIONS

ServiceResolver = cw.ServiceResolver


class ClientError(Exception):
    """The call failed; `str()` is client-go's error text (what follows `failed to call webhook: `)."""


class SetupError(Exception):
    """No client can be built from the clientConfig (a caBundle that does not load)."""


class AdmissionClient(cw.WebhookClient):
    """POSTs AdmissionReviews to one webhook over a keep-alive session."""

    def __init__(
        self, client_config: dict[str, Any], webhook_name: str, timeout: float, resolver: ServiceResolver | None
    ) -> None:
        try:
            super().__init__(client_config, webhook_name, service_resolver=resolver, timeout=timeout)
        except cw.ConverterSetupError as err:
            raise SetupError(str(err)) from None

    async def review(self, review: dict[str, Any], version: str) -> dict[str, Any]:
        """POST the review and return the decoded answer; ClientError otherwise."""
        try:
            t = await self._target()
        except cw.WebhookCallError as err:
            raise ClientError(str(err)) from None
        body = orjson.dumps(review)
        got_headers = False
        try:
            async with self._client().post(
                t.connect_url, data=body, headers=t.headers, server_hostname=t.server_name
            ) as resp:
                got_headers = True
                data = await resp.read()
                status, ctype = resp.status, resp.headers.get("Content-Type", "")
        except TimeoutError:
            # The deadline is the request context's (timeoutSeconds), not the HTTP client's own.
            if got_headers:
                raise ClientError(
                    "unexpected error when reading response body. Please retry. Original error: context deadline exceeded"
                ) from None
            raise ClientError(f"Post {go_quote(t.url)}: context deadline exceeded") from None
        except aiohttp.ClientPayloadError:
            raise ClientError(
                "unexpected error when reading response body. Please retry. Original error: unexpected EOF"
            ) from None
        except aiohttp.ClientError as exc:
            raise ClientError(f"Post {go_quote(t.url)}: {await self._transport_error(exc, t)}") from None
        try:
            return decode_admission_review(status, ctype, data, version)
        except cw.WebhookCallError as err:
            raise ClientError(str(err)) from None


def decode_admission_review(status: int, content_type: str, body: bytes, version: str) -> dict[str, Any]:
    """The answer decoded as client-go decodes into an AdmissionReview of `version`; WebhookCallError otherwise.
    An answer without apiVersion or kind decodes (the response check refuses it later, as upstream's does)."""
    if not 200 <= status <= 206:
        raise cw._error_answer(status, content_type, body)
    if not body:
        raise cw.WebhookCallError(
            f"0-length response with status code: {status} and content type: {content_type or 'application/json'}"
        )
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise cw.WebhookCallError(
            f"couldn't get version/kind; json parse error: {cw.go_json_syntax_error(exc, body)}"
        ) from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        why = f"json: cannot unmarshal {cw.json_kind(doc)} into Go value of type {cw._FIND_KIND_TYPE}"
        raise cw.WebhookCallError(f"couldn't get version/kind; json parse error: {why}")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str | None) or not isinstance(kind, str | None):
        bad = "apiVersion" if not isinstance(api_version, str | None) else "kind"
        why = f"json: cannot unmarshal {cw.json_kind(doc[bad])} into Go struct field .{bad} of type string"
        raise cw.WebhookCallError(f"couldn't get version/kind; json parse error: {why}")
    if not api_version or not kind:
        return doc
    gv = cw._parse_api_version(api_version)
    if gv is None:
        raise cw.WebhookCallError(f"unexpected GroupVersion string: {api_version}")
    group, got_version = gv
    if (group, got_version, kind) == (GROUP, version, "AdmissionReview"):
        if not isinstance(doc.get("response"), dict | None):
            why = f"json: cannot unmarshal {cw.json_kind(doc['response'])} into Go struct field AdmissionReview.response of type {version}.AdmissionResponse"
            raise cw.WebhookCallError(why)
        return doc
    if group == GROUP and got_version in KNOWN_VERSIONS and kind == "AdmissionReview":
        raise cw.WebhookCallError(
            f"converting ({got_version}.AdmissionReview) to ({version}.AdmissionReview): unknown conversion"
        )
    if kind in ("Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"):
        raise cw.WebhookCallError(f"converting (v1.{kind}) to ({version}.AdmissionReview): unknown conversion")
    raise cw.WebhookCallError(
        f"no kind {go_quote(kind)} is registered for version {go_quote(api_version)} in scheme {go_quote(cw._SCHEME_NAME)}"
    )
