"""Converting custom resources between the versions of their CRD (upstream: apiextensions-apiserver
pkg/apiserver/conversion, converter.go, nop_converter.go and webhook_converter.go).

Strategy None only rewrites apiVersion. Strategy Webhook sends the objects not yet at the desired version to the
CRD's conversion webhook in one ConversionReview, checks the answer as upstream does, and keeps the input
objects' metadata except for the labels and annotations the webhook set. Failures are what upstream returns: a
plain error, which a client sees as a 500 Status without a reason (ConversionError).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..api import errors
from ..api import validation as v
from ..api.errors import FieldError
from ..api.meta import parse_group_version
from .conversion_webhook import (
    DEFAULT_TIMEOUT,
    ConverterSetupError,
    ServiceResolver,
    WebhookCallError,
    WebhookClient,
    go_type,
    json_kind,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "STRATEGY_NONE",
    "STRATEGY_WEBHOOK",
    "CRConverter",
    "ConversionError",
    "ConverterSetupError",
    "ServiceResolver",
    "conversion_strategy",
    "needs_conversion",
    "rewrite_api_version",
]

STRATEGY_NONE = "None"
STRATEGY_WEBHOOK = "Webhook"
_REVIEW_GROUP = "apiextensions.k8s.io"

Object = dict[str, Any]


class ConversionError(errors.StatusError):
    """A conversion failure. Upstream returns it as a plain error, which the API server answers with a 500
    Status carrying the text and no reason (responsewriters.ErrorToAPIStatus)."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "", message)

    def status(self) -> dict[str, Any]:
        out = super().status()
        if not out.get("reason"):
            del out["reason"]  # StatusReasonUnknown is "" and omitted on the wire
        return out


def conversion_strategy(crd: dict[str, Any]) -> str:
    """spec.conversion.strategy, defaulted to None."""
    conv = (crd.get("spec") or {}).get("conversion") or {}
    return str(conv.get("strategy") or STRATEGY_NONE)


def needs_conversion(crd: dict[str, Any]) -> bool:
    """Whether converting this CRD's objects takes more than rewriting apiVersion (a webhook call), so the
    handler can keep its synchronous path for every other CRD."""
    return conversion_strategy(crd) != STRATEGY_NONE


def rewrite_api_version(obj: Object, api_version: str) -> Object:
    """Strategy None: `obj` itself when already at `api_version`, else a shallow copy with apiVersion replaced."""
    if obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "apiVersion": api_version}


# -- group/version/kind as apimachinery prints them --------------------------------------------------------------


@dataclass(frozen=True)
class _GVK:
    group: str = ""
    version: str = ""
    kind: str = ""

    @property
    def gv(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Kind={self.kind}"


def _string(obj: Any, key: str) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def _gvk(obj: Object) -> _GVK:
    """The object's group/version/kind as unstructured reads it: all empty when apiVersion does not parse."""
    try:
        group, version = parse_group_version(_string(obj, "apiVersion"))
    except ValueError:
        return _GVK()
    return _GVK(group, version, _string(obj, "kind"))


def _is_empty_object(obj: Object) -> bool:
    # Upstream converts an object of only apiVersion and kind without the webhook (the cacher probes with one).
    return len(obj) == 2 and "apiVersion" in obj and "kind" in obj


# -- the converter -----------------------------------------------------------------------------------------------


def _settings_key(crd: dict[str, Any]) -> bytes:
    spec = crd.get("spec") or {}
    versions = [str(ver.get("name")) for ver in spec.get("versions") or [] if isinstance(ver, dict)]
    return orjson.dumps(
        [(crd.get("metadata") or {}).get("name"), spec.get("group"), versions, spec.get("conversion")],
        option=orjson.OPT_SORT_KEYS,
    )


class CRConverter:
    """Converts a CRD's objects between its versions by its conversion strategy. Build it with `for_crd`; a
    Webhook converter holds an HTTP session, released by `close()`."""

    def __init__(
        self,
        crd_name: str,
        group: str,
        versions: Sequence[str],
        strategy: str = STRATEGY_NONE,
        *,
        webhook: WebhookClient | None = None,
        review_versions: Sequence[str] = (),
        key: bytes = b"",
    ) -> None:
        self.crd_name = crd_name
        self.group = group
        self.versions = frozenset(versions)
        self.strategy = strategy
        self.webhook = webhook
        self.review_versions = tuple(review_versions)
        self._key = key

    @classmethod
    def for_crd(
        cls,
        crd: dict[str, Any],
        *,
        service_resolver: ServiceResolver | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> CRConverter:
        """The converter for a CRD. ConverterSetupError when upstream could not build one either (an unknown
        strategy, a webhook with neither URL nor service, a CA bundle that does not load)."""
        spec = crd.get("spec") or {}
        name = str((crd.get("metadata") or {}).get("name") or "")
        group = str(spec.get("group") or "")
        versions = [str(ver.get("name")) for ver in spec.get("versions") or [] if isinstance(ver, dict)]
        strategy = conversion_strategy(crd)
        key = _settings_key(crd)
        if strategy == STRATEGY_NONE:
            return cls(name, group, versions, strategy, key=key)
        if strategy != STRATEGY_WEBHOOK:
            raise ConverterSetupError(f"unknown conversion strategy {errors.go_quote(strategy)} for CRD {name}")
        wh = (spec.get("conversion") or {}).get("webhook") or {}
        client = WebhookClient(
            wh.get("clientConfig") or {},
            f"conversion_webhook_for_{name}",
            service_resolver=service_resolver,
            timeout=timeout,
        )
        review_versions = [str(x) for x in wh.get("conversionReviewVersions") or []]
        return cls(name, group, versions, strategy, webhook=client, review_versions=review_versions, key=key)

    @property
    def is_noop(self) -> bool:
        """True when conversion is only an apiVersion rewrite (strategy None)."""
        return self.webhook is None

    def up_to_date(self, crd: dict[str, Any]) -> bool:
        """Whether this converter still fits `crd` (same name, group, versions and spec.conversion); rebuild it
        otherwise."""
        return self._key == _settings_key(crd)

    async def close(self) -> None:
        if self.webhook is not None:
            await self.webhook.close()

    async def convert_object(self, obj: Object, to_api_version: str) -> Object:
        return (await self.convert([obj], to_api_version))[0]

    async def convert(self, objects: Sequence[Object], to_api_version: str) -> list[Object]:
        """`objects` at `to_api_version`, in their order. Objects already there are returned as they are (the
        same dicts); the inputs are never changed. ConversionError on any failure, with upstream's text."""
        target = self._target_gv(to_api_version)
        out = list(objects)
        pending: list[int] = []
        for i, obj in enumerate(objects):
            self._check_source(obj, target)
            if obj.get("apiVersion") == to_api_version:
                continue
            if self.webhook is None or _is_empty_object(obj):
                out[i] = rewrite_api_version(obj, to_api_version)
            else:
                pending.append(i)
        if pending:
            converted = await self._call_webhook([objects[i] for i in pending], to_api_version, target)
            for i, obj in zip(pending, converted, strict=True):
                out[i] = obj
        return out

    # -- checks of crConverter.ConvertToVersion --------------------------------------------------------------

    def _target_gv(self, to_api_version: str) -> tuple[str, str]:
        try:
            return parse_group_version(to_api_version)
        except ValueError as err:
            raise ConversionError(str(err)) from None

    def _check_source(self, obj: Object, target: tuple[str, str]) -> None:
        src = _gvk(obj)
        group, version = target
        target_text = f"{group}/{version}" if group else version
        if src.group != group:
            raise ConversionError(
                f"{src} is unstructured and is not suitable for converting to {errors.go_quote(target_text)}"
            )
        if group != self.group or version not in self.versions:
            raise ConversionError(f"request to convert CR to an invalid group/version: {target_text}")
        if src.version not in self.versions:
            raise ConversionError(f"request to convert CR from an invalid group/version: {src.gv}")

    # -- the webhook -----------------------------------------------------------------------------------------

    def _review_version(self) -> str:
        # The first version listed that this server speaks wins.
        for ver in self.review_versions:
            if ver in ("v1beta1", "v1"):
                return ver
        raise ConversionError("no supported conversion review versions")

    async def _call_webhook(self, objects: list[Object], to_api_version: str, target: tuple[str, str]) -> list[Object]:
        assert self.webhook is not None
        review_version = self._review_version()
        review_api_version = f"{_REVIEW_GROUP}/{review_version}"
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": review_api_version,
            "request": {"uid": uid, "desiredAPIVersion": to_api_version, "objects": objects},
            "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
        }
        # Errors about the review as a whole name the first object sent, as upstream names the object it converts.
        first = _gvk(objects[0])
        try:
            answer = await self.webhook.call(review, review_api_version)
            converted = _converted_objects(answer, review_version, uid)
        except WebhookCallError as exc:
            raise ConversionError(f"conversion webhook for {first} failed: {exc}") from None
        if len(converted) != len(objects):
            raise ConversionError(
                f"conversion webhook for {first} returned {len(converted)} objects, expected {len(objects)}"
            )
        target_gv = f"{target[0]}/{target[1]}" if target[0] else target[1]
        return [
            _accept(obj, raw, index, target_gv) for index, (obj, raw) in enumerate(zip(objects, converted, strict=True))
        ]


def _converted_objects(answer: dict[str, Any], review_version: str, uid: str) -> list[Any]:
    """The response's convertedObjects once the review checks out (upstream getConvertedObjectsFromResponse)."""
    if review_version == "v1":
        # v1beta1 answers were never checked for their kind or uid; v1 answers are.
        got = _gvk(answer)
        want = _GVK(_REVIEW_GROUP, "v1", "ConversionReview")
        if got != want:
            raise WebhookCallError(f"expected webhook response of {want}, got {got}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise WebhookCallError("no response provided")
    if review_version == "v1":
        got_uid = response.get("uid") or ""
        if got_uid != uid:
            raise WebhookCallError(f"expected response.uid={errors.go_quote(uid)}, got {errors.go_quote(got_uid)}")
    result = response.get("result") or {}
    status = result.get("status") or ""
    if status != "Success":
        message = result.get("message") or ""
        raise WebhookCallError(message or f"response.result.status was '{status}', not 'Success'")
    return response.get("convertedObjects") or []


def _accept(original: Object, raw: Any, index: int, target_gv: str) -> Object:
    """One converted object checked against its original, with the original's metadata restored (upstream's
    single-object path: each object is reported as upstream reports the object it converts)."""
    gvk = _gvk(original)
    if raw is None:
        raise ConversionError("unexpected end of JSON input")
    if not isinstance(raw, dict):
        raise ConversionError(
            f"json: cannot unmarshal {json_kind(raw)} into Go value of type map[string]interface {{}}"
        )
    if not _string(raw, "kind"):
        raise ConversionError(f"Object 'Kind' is missing in '{orjson.dumps(raw).decode()}'")
    got = _gvk(raw)
    if got.gv != target_gv:
        raise ConversionError(
            f"conversion webhook for {gvk} returned invalid object at index {index}: "
            f"invalid groupVersion (expected {target_gv}, received {got.gv})"
        )
    if got.kind != gvk.kind:
        raise ConversionError(
            f"conversion webhook for {gvk} returned invalid object at index {index}: "
            f"invalid kind (expected {gvk.kind}, received {got.kind})"
        )
    problem = _identity_changed(original, raw)
    if problem:
        raise ConversionError(f"conversion webhook for {gvk} returned invalid object: {problem}")
    problem = _restore_object_meta(original, raw)
    if problem:
        raise ConversionError(f"conversion webhook for {gvk} returned invalid metadata: {problem}")
    return raw


def _identity_changed(original: Object, converted: Object) -> str | None:
    """What of kind, name, namespace and uid the webhook changed (upstream validateConvertedObject)."""
    if _string(original, "kind") != _string(converted, "kind"):
        return f"must have the same kind: {_string(original, 'kind')} != {_string(converted, 'kind')}"
    before, after = original.get("metadata"), converted.get("metadata")
    for key, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        a, b = _string(before, key), _string(after, key)
        if a != b:
            return f"must have the same {label}: {a} != {b}"
    return None


def _restore_object_meta(original: Object, converted: Object) -> str | None:
    """Replace `converted`'s metadata by a copy of the original's, keeping the converted labels and annotations
    (validated when they differ); the problem in upstream's words, or None (upstream restoreObjectMeta)."""
    if "metadata" not in converted:
        return "missing metadata in converted object"
    response_meta = converted["metadata"]
    if not isinstance(response_meta, dict):
        return f"invalid metadata of type {go_type(response_meta)} in converted object"
    source = original.get("metadata")
    meta: Any = {} if "metadata" not in original else orjson.loads(orjson.dumps(source))
    converted["metadata"] = meta
    if not isinstance(meta, dict):
        return f"invalid metadata of type {go_type(meta)} in input object"
    for field in ("labels", "annotations"):
        got = response_meta.get(field)
        if got is None:
            meta.pop(field, None)
            continue
        if not isinstance(got, dict):
            return f"invalid metadata.{field} of type {go_type(got)} in converted object"
        had = meta.get(field)
        if had is not None and not isinstance(had, dict):
            return f"invalid metadata.{field} of type {go_type(had)} in original object"
        had = had or {}
        changed = len(had) != len(got)
        for k, value in got.items():
            if not isinstance(value, str):
                return f"metadata.{field}[{k}] must be a string, but is {go_type(value)} in converted object"
            if had.get(k) != value:
                changed = True
        if changed:
            problems = _label_errors(got) if field == "labels" else v.validate_annotations(got, "metadata.annotation")
            if problems:
                return errors.aggregate(str(p) for p in problems)
        meta[field] = got
    return None


def _label_errors(labels: dict[str, str]) -> list[FieldError]:
    # metav1 validation.ValidateLabels: key and value problems are both reported at the map's path.
    path = "metadata.labels"
    out: list[FieldError] = []
    for k, value in labels.items():
        out += [errors.invalid(path, k, m) for m in v.is_qualified_name(k)]
        out += [errors.invalid(path, value, m) for m in v.is_label_value(value)]
    return out
