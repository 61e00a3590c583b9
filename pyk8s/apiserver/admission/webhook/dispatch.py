"""One call to one webhook, as both plugins make it (upstream: the callHook / callAttrMutatingHook halves of
apiserver pkg/admission/plugin/webhook/{validating,mutating}/dispatcher.go that do not differ): the dry-run
check against sideEffects, the AdmissionReview, the HTTPS call, the answer's checks, its audit annotations and
warnings, and the webhook's verdict.
"""

from __future__ import annotations

from .client import ClientError, SetupError
from .configuration import WebhookAccessor
from .errors import CallingWebhookError, dry_run_unsupported, to_status_error
from .generic import CallResult, Invocation, VersionedAttributes, Webhook
from .request import (
    AdmissionResponse,
    InvalidResponse,
    create_admission_review,
    new_uid,
    review_version,
    verify_admission_response,
)

NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")


class WebhookRejection(Exception):
    """The webhook answered `allowed: false`; `status` is the refusal the client sees."""

    def __init__(self, status: Exception) -> None:
        super().__init__(str(status))
        self.status = status


async def call_hook(
    plugin: Webhook, hook: WebhookAccessor, invocation: Invocation, va: VersionedAttributes, mutating: bool,
    result: CallResult,
) -> AdmissionResponse:  # fmt: skip
    """The webhook's allowing answer; CallingWebhookError, WebhookRejection or a StatusError otherwise."""
    a = va.attributes
    if a.dry_run:
        if hook.side_effects is None:
            raise CallingWebhookError(hook.name, "Webhook SideEffects is nil")
        if hook.side_effects not in NO_SIDE_EFFECTS:
            raise dry_run_unsupported(hook.name)
    version = review_version(hook.hook.get("admissionReviewVersions"))
    if version is None:
        raise CallingWebhookError(hook.name, "could not create admission objects: webhook does not accept known "
                                             "AdmissionReview versions (v1, v1beta1)")  # fmt: skip
    try:
        client = hook.client(plugin.resolver())
    except SetupError as err:
        raise CallingWebhookError(hook.name, f"could not get REST client: {err}") from None
    uid = new_uid()
    review = create_admission_review(version, uid, plugin.review_request(va, invocation), va.object, va.old_object)
    try:
        answer = await client.review(review, version)
    except ClientError as err:
        raise CallingWebhookError(hook.name, f"failed to call webhook: {err}") from None
    try:
        response = verify_admission_response(uid, mutating, answer, version)
    except InvalidResponse as err:
        raise CallingWebhookError(hook.name, f"received invalid webhook response: {err}") from None
    for key, value in response.audit_annotations.items():
        result.audit_annotations.setdefault(f"{hook.name}/{key}", value)
    result.warnings.extend(response.warnings)
    if not response.allowed:
        raise WebhookRejection(to_status_error(hook.name, response.result))
    return response


def failed_open_annotation(prefix: str, round_: int, index: int) -> str:
    return f"{prefix}round_{round_}_index_{index}"
