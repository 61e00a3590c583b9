"""The AdmissionReview sent to a webhook and the checks made on its answer (upstream: apiserver
pkg/admission/plugin/webhook/request/admissionreview.go).

The review is the first of the webhook's admissionReviewVersions this server knows (v1, v1beta1; both have the
same request shape). The request names the resource and kind the webhook matched (another version of the
requested one under matchPolicy Equivalent) and, as requestKind/requestResource/requestSubResource, the ones
asked for; the objects are in the matched version.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

from ....api.errors import go_quote
from ...authn import UserInfo
from .. import CREATE, DELETE, UPDATE

GROUP = "admission.k8s.io"
KNOWN_VERSIONS = ("v1", "v1beta1")
JSON_PATCH = "JSONPatch"
_OPTIONS_KINDS = {CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions"}


class InvalidResponse(Exception):
    """The answer is not a usable AdmissionResponse (upstream's VerifyAdmissionResponse errors)."""


@dataclass(frozen=True)
class GVK:
    group: str
    version: str
    kind: str

    def as_json(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "kind": self.kind}


@dataclass(frozen=True)
class GVR:
    group: str
    version: str
    resource: str

    def as_json(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}


@dataclass(frozen=True)
class ReviewRequest:
    """What the AdmissionRequest says beyond the objects: the matched and the requested resource and kind."""

    kind: GVK
    resource: GVR
    subresource: str
    request_kind: GVK
    request_resource: GVR
    request_subresource: str
    name: str
    namespace: str
    operation: str
    user: UserInfo
    dry_run: bool
    options: dict[str, Any] = field(default_factory=dict)


def review_version(admission_review_versions: Any) -> str | None:
    """The first version the webhook accepts that this server speaks (upstream CreateAdmissionObjects)."""
    for version in admission_review_versions or ():
        if version in KNOWN_VERSIONS:
            return str(version)
    return None


def user_info(user: UserInfo) -> dict[str, Any]:
    """An authentication/v1 UserInfo, empty fields left out."""
    out: dict[str, Any] = {}
    if user.name:
        out["username"] = user.name
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def operation_options(operation: str, dry_run: bool, options: dict[str, Any]) -> dict[str, Any] | None:
    """The request's Create/Update/DeleteOptions as a typed object (CONNECT's options are the connect kind's)."""
    kind = _OPTIONS_KINDS.get(operation)
    if kind is None:
        return dict(options) or None
    out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1", **options}
    if dry_run and "dryRun" not in out:
        out["dryRun"] = ["All"]
    return out


def new_uid() -> str:
    return str(uuid.uuid4())


def admission_request(r: ReviewRequest) -> dict[str, Any]:
    """The AdmissionRequest without uid and objects: the `request` of match conditions (upstream
    CreateAdmissionRequest)."""
    request: dict[str, Any] = {
        "kind": r.kind.as_json(),
        "resource": r.resource.as_json(),
        "requestKind": r.request_kind.as_json(),
        "requestResource": r.request_resource.as_json(),
        "operation": r.operation,
        "userInfo": user_info(r.user),
        "dryRun": r.dry_run,
        "options": operation_options(r.operation, r.dry_run, r.options),
    }
    if r.subresource:
        request["subResource"] = r.subresource
    if r.request_subresource:
        request["requestSubResource"] = r.request_subresource
    if r.name:
        request["name"] = r.name
    if r.namespace:
        request["namespace"] = r.namespace
    return request


def create_admission_review(version: str, uid: str, r: ReviewRequest, obj: Any, old_obj: Any) -> dict[str, Any]:
    """An AdmissionReview of `version` (upstream CreateV1AdmissionReview / CreateV1beta1AdmissionReview)."""
    request = {"uid": uid, **admission_request(r), "object": obj, "oldObject": old_obj}
    return {"kind": "AdmissionReview", "apiVersion": f"{GROUP}/{version}", "request": request}


@dataclass
class AdmissionResponse:
    """What the plugins use of a webhook's answer."""

    allowed: bool
    result: dict[str, Any] | None
    patch: bytes = b""
    patch_type: str = ""
    audit_annotations: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _patch_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise InvalidResponse(f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                              "AdmissionResponse.response.patch of type []uint8")  # fmt: skip
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidResponse("illegal base64 data in response.patch") from None


def verify_admission_response(uid: str, mutating: bool, review: dict[str, Any], version: str) -> AdmissionResponse:
    """The answer's response, checked as upstream checks it; InvalidResponse with upstream's text."""
    response = review.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    patch = _patch_bytes(response.get("patch")) if mutating or version == "v1" else b""
    patch_type = response.get("patchType")
    if version == "v1":
        if response.get("uid", "") != uid:
            raise InvalidResponse(
                f"expected response.uid={go_quote(uid)}, got {go_quote(str(response.get('uid', '')))}"
            )
        api_version = str(review.get("apiVersion") or "")
        group, _, ver = api_version.rpartition("/")
        got = f"{group}/{ver}, Kind={review.get('kind') or ''}"
        if (group, ver, review.get("kind")) != (GROUP, "v1", "AdmissionReview"):
            raise InvalidResponse(f"expected webhook response of {GROUP}/v1, Kind=AdmissionReview, got {got}")
        if mutating:
            if patch and patch_type is None:
                raise InvalidResponse("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise InvalidResponse("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise InvalidResponse('webhook returned invalid response.patchType of ""')
        else:
            if patch:
                raise InvalidResponse("validating webhook may not return response.patch")
            if patch_type is not None:
                raise InvalidResponse("validating webhook may not return response.patchType")
    else:
        # v1beta1 never checked the uid, the kind or the patch type: a patch is taken as a JSON patch.
        patch_type = JSON_PATCH if mutating and patch else None
        if not mutating:
            patch = b""
    result = response.get("status")
    annotations = response.get("auditAnnotations")
    warnings = response.get("warnings")
    return AdmissionResponse(
        allowed=response.get("allowed") is True,
        result=result if isinstance(result, dict) else None,
        patch=patch,
        patch_type=str(patch_type or ""),
        audit_annotations={str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {},
        warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
    )
