"""The HTTPS client a CRD's conversion webhook is called with: the API server's shared webhook client
(pyk8s.apiserver.webhook: a URL, or a Service resolved by the caller, TLS verified against the CRD's caBundle,
client-go's error texts), with a ConversionReview in and out, decoded as client-go's Result.Into decodes it
(upstream: k8s.io/apiserver pkg/util/webhook, and apiextensions-apiserver's webhook converter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ..api.errors import go_quote
from ..apiserver import webhook
from ..apiserver.webhook import (
    DEFAULT_TIMEOUT,
    SCHEME_NAME,
    UNVERSIONED_KINDS,
    Answer,
    ServiceResolver,
    go_duration,
    go_type,
    json_kind,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "ConverterSetupError",
    "ServiceResolver",
    "WebhookCallError",
    "WebhookClient",
    "decode_review",
    "go_duration",
    "go_type",
    "json_kind",
]

# The webhook could not be called or answered something that does not decode as a ConversionReview; the
# message is the error text upstream wraps into `conversion webhook for ... failed: ...`.
WebhookCallError = webhook.CallError
# A converter cannot be built from the CRD (a CA bundle that does not load, no webhook destination, an unknown
# strategy); upstream fails to serve the CRD's resources then.
ConverterSetupError = webhook.SetupError


class WebhookClient(webhook.WebhookClient):
    """POSTs ConversionReviews to one webhook (a CRD's spec.conversion.webhook.clientConfig)."""

    def __init__(
        self,
        client_config: dict[str, Any],
        webhook_name: str,
        *,
        service_resolver: ServiceResolver | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(client_config, webhook_name, service_resolver=service_resolver, timeout=timeout)

    async def call(self, review: dict[str, Any], expected_api_version: str) -> dict[str, Any]:
        """POST `review`, and return the decoded answer; WebhookCallError carries client-go's error text."""
        answer = await self.post_json(review)
        return decode_review(answer, expected_api_version)


# -- the answer, as client-go's Result.Into reads it ---------------------------------------------------------

_APIEXTENSIONS_KINDS = {"ConversionReview", "CustomResourceDefinition", "CustomResourceDefinitionList"}


def _registered_type(group: str, version: str, kind: str) -> str | None:
    """The Go type (as reflect prints it) the webhook client's scheme decodes this kind into, if any."""
    if kind in UNVERSIONED_KINDS:
        return f"v1.{kind}"
    if group == "apiextensions.k8s.io" and version in ("v1", "v1beta1") and kind in _APIEXTENSIONS_KINDS:
        return f"{version}.{kind}"
    return None


def decode_review(answer: Answer, expected_api_version: str) -> dict[str, Any]:
    """The webhook's answer decoded into a ConversionReview of `expected_api_version`, failing where client-go's
    decoder would; the result keeps the answer's own apiVersion and kind (possibly empty) for the caller's check."""
    doc, gv, kind = webhook.read_document(answer)
    # Missing parts are taken from the type decoded into (the serializer's gvkWithDefaults).
    want_group, _, want_version = expected_api_version.partition("/")
    group, version = gv
    kind = kind or "ConversionReview"
    if not version and not group:
        group, version = want_group, want_version
    elif not version and group == want_group:
        version = want_version
    if (group, version, kind) != (want_group, want_version, "ConversionReview"):
        registered = _registered_type(group, version, kind)
        if registered is None:
            gv_text = f"{group}/{version}" if group else version
            raise WebhookCallError(
                f"no kind {go_quote(kind)} is registered for version {go_quote(gv_text)} in scheme {go_quote(SCHEME_NAME)}"
            )
        raise WebhookCallError(f"converting ({registered}) to ({want_version}.ConversionReview): unknown conversion")
    problem = _review_type_error(doc, want_version)
    if problem:
        raise WebhookCallError(problem)
    return doc


def _review_type_error(doc: dict[str, Any], version: str) -> str | None:
    """The first json.UnmarshalTypeError decoding `doc` into the ConversionReview struct would report (for the
    fields the converter reads), in the document's key order as Go's decoder meets them."""

    def bad(value: Any, struct: str, path: str, go: str) -> str:
        return f"json: cannot unmarshal {json_kind(value)} into Go struct field {struct}.{path} of type {go}"

    for key, value in doc.items():
        if value is None:
            continue
        if key in ("request", "response") and not isinstance(value, dict):
            what = "ConversionRequest" if key == "request" else "ConversionResponse"
            return bad(value, "ConversionReview", key, f"{version}.{what}")
        if key != "response":
            continue
        for rkey, rvalue in value.items():
            if rvalue is None:
                continue
            path = f"response.{rkey}"
            if rkey == "uid" and not isinstance(rvalue, str):
                return bad(rvalue, "ConversionResponse", path, "types.UID")
            if rkey == "convertedObjects" and not isinstance(rvalue, list):
                return bad(rvalue, "ConversionResponse", path, "[]runtime.RawExtension")
            if rkey == "result":
                if not isinstance(rvalue, dict):
                    return bad(rvalue, "ConversionResponse", path, "v1.Status")
                problem = _status_type_error(rvalue, bad)
                if problem:
                    return problem
    return None


def _status_type_error(result: dict[str, Any], bad: Callable[[Any, str, str, str], str]) -> str | None:
    for key, value in result.items():
        if value is None:
            continue
        path = f"response.result.{key}"
        if key in ("status", "message") and not isinstance(value, str):
            return bad(value, "Status", path, "string")
        if key == "reason" and not isinstance(value, str):
            return bad(value, "Status", path, "v1.StatusReason")
        if key == "code":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return bad(value, "Status", path, "int32")
            if isinstance(value, float) or not -(2**31) <= value < 2**31:
                shown = orjson.dumps(value).decode()
                return f"json: cannot unmarshal number {shown} into Go struct field Status.{path} of type int32"
    return None
