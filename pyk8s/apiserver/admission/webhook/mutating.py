"""The MutatingAdmissionWebhook plugin: every MutatingWebhookConfiguration webhook that matches a write is
called in turn, each seeing what the ones before it did, and may change the object with a JSON patch
(upstream: apiserver pkg/admission/plugin/webhook/mutating plugin.go, dispatcher.go and
reinvocationcontext.go).

A patch applies to the object in the webhook's version; the result is put into the kind's stored form (a value
of the wrong type is a 500, as upstream's decode), defaulted, and converted back to the stored version. Once the
mutating phase is over, an object a webhook changed is validated again, since pyk8s's registry validated it
before admission (upstream validates after mutating admission only).

Reinvocation: a webhook with reinvocationPolicy IfNeeded that already ran is called once more when a later
webhook (or, in the second pass, an in-tree plugin) changed the object; the admission chain then runs its
mutating plugins a second time (pyk8s.apiserver.admission.Chain).

Audit annotations `mutation.webhook.admission.k8s.io/round_<r>_index_<i>` record whether each call changed
the object; the `patch.webhook.admission.k8s.io/` annotations (Request level and above upstream) are not
recorded, as pyk8s's audit annotations have no level.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from ....api import errors
from ....api.meta import Object, json_copy
from ....api.patch import PatchError, json_patch
from ....api.types.codec import DecodeError, codec_for
from ...registry.strategy import validate_object_meta, validate_object_meta_update
from ...warning import add_audit_annotation, add_warning
from .. import CREATE, UPDATE, Attributes
from .configuration import MUTATING, WebhookAccessor, WebhookSource
from .dispatch import WebhookRejection, call_hook, failed_open_annotation
from .errors import CallingWebhookError, failed_closed
from .generic import CallResult, Host, Invocation, VersionedAttributes, Versioner, Webhook, is_exempt
from .request import JSON_PATCH
from .validating import cached_configurations

log = logging.getLogger(__name__)

PLUGIN_NAME = "MutatingAdmissionWebhook"
MUTATION_PREFIX = "mutation.webhook.admission.k8s.io/"
FAILED_OPEN_PREFIX = "failed-open." + MUTATION_PREFIX


@dataclass
class ReinvokeContext:
    """What the plugin remembers between the chain's two passes (upstream webhookReinvokeContext)."""

    last_output: Object | None = None
    previously_invoked: set[str] = field(default_factory=set)  # IfNeeded webhooks called so far
    reinvoke: set[str] = field(default_factory=set)  # the ones to call again

    def require_reinvoking(self) -> None:
        if self.previously_invoked:
            self.reinvoke |= self.previously_invoked
            self.previously_invoked = set()


class MutatingAdmissionWebhook(Webhook):
    name = PLUGIN_NAME

    def __init__(self, host: Host) -> None:
        super().__init__(host, WebhookSource(cached_configurations(host, MUTATING), mutating=True))

    async def validate(self, a: Attributes) -> None:
        return None

    async def admit(self, a: Attributes) -> None:
        if is_exempt(a):
            return
        hooks = self.source.webhooks()
        if not hooks:
            return
        reinvocation = a.reinvocation
        rc = reinvocation.values.get(PLUGIN_NAME)
        if rc is None:
            rc = reinvocation.values[PLUGIN_NAME] = ReinvokeContext()
        if reinvocation.is_reinvoke and a.object != rc.last_output:
            # The in-tree plugins' second pass changed the object: every IfNeeded webhook sees it again.
            rc.require_reinvoking()
        try:
            changed_any = await self._dispatch(a, hooks, rc)
        finally:
            rc.last_output = json_copy(a.object) if a.object is not None else None
        if changed_any:
            self._validate_again(a)

    async def _dispatch(self, a: Attributes, hooks: list[WebhookAccessor], rc: ReinvokeContext) -> bool:
        reinvocation = a.reinvocation
        round_ = 1 if reinvocation.is_reinvoke else 0
        ns_labels = await self.namespace_labels(a)
        versioner = Versioner(self, a)
        current: VersionedAttributes | None = None
        for i, hook in enumerate(hooks):
            invocation = await self.should_call_hook(hook, a, ns_labels, versioner)
            if invocation is None:
                continue
            # A webhook skipped in the first pass is not called for the first time in the second.
            if reinvocation.is_reinvoke and hook.uid not in rc.reinvoke:
                continue
            current = await self._versioned(a, versioner, current, invocation)
            result = CallResult()
            changed = False
            error: Exception | None = None
            try:
                changed = await self._call(hook, invocation, current, result)
            except Exception as err:
                error = err
            finally:
                annotation = {"configuration": hook.configuration_name, "webhook": hook.name, "mutated": changed}
                result.audit_annotations[f"{MUTATION_PREFIX}round_{round_}_index_{i}"] = orjson.dumps(annotation).decode()  # fmt: skip
                self._publish(result)
            if changed:
                rc.require_reinvoking()
                reinvocation.should_reinvoke = True
            if hook.reinvocation_policy == "IfNeeded":
                rc.previously_invoked.add(hook.uid)
            if error is None:
                continue
            if isinstance(error, CallingWebhookError):
                if hook.failure_policy == "Ignore":
                    log.warning("Failed calling webhook, failing open %s: %s", hook.name, error)
                    add_audit_annotation(failed_open_annotation(FAILED_OPEN_PREFIX, round_, i), hook.name)
                    continue
                log.warning("Failed calling webhook, failing closed %s: %s", hook.name, error)
                raise failed_closed(error) from None
            if isinstance(error, WebhookRejection):
                raise error.status from None
            raise error
        if current is None or not current.dirty:
            return False
        a.object = await self.convert(current.object, current.target, a.resource, typed=True)
        return True

    async def _versioned(
        self, a: Attributes, versioner: Versioner, current: VersionedAttributes | None, invocation: Invocation
    ) -> VersionedAttributes:
        """The working copy in the invocation's version: the first one made, then converted along as webhooks
        ask for other versions (upstream's single versionedAttr of the mutating dispatcher)."""
        if current is None:
            return await versioner.get(invocation)
        if current.kind == invocation.kind:
            return current
        return VersionedAttributes(
            a, invocation.target, invocation.kind,
            await self.convert(current.object, current.target, invocation.target),
            await self.convert(current.old_object, current.target, invocation.target),
            current.dirty,
        )  # fmt: skip

    @staticmethod
    def _publish(result: CallResult) -> None:
        for w in result.warnings:
            add_warning(w)
        for key, value in result.audit_annotations.items():
            add_audit_annotation(key, value)

    async def _call(
        self, hook: WebhookAccessor, invocation: Invocation, va: VersionedAttributes, result: CallResult
    ) -> bool:
        """Call the webhook and apply its patch to `va`; whether the object changed."""
        response = await call_hook(self, hook, invocation, va, True, result)
        if not response.patch:
            return False
        try:
            operations = orjson.loads(response.patch)
        except orjson.JSONDecodeError as err:
            raise errors.internal_error(str(err)) from None
        if not isinstance(operations, list):
            raise errors.internal_error("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        if not operations:
            return False
        if va.object is None:
            raise errors.internal_error(f"admission webhook {errors.go_quote(hook.name)} attempted to modify the "
                                        "object, which is not supported for this operation")  # fmt: skip
        if response.patch_type != JSON_PATCH:
            raise CallingWebhookError(hook.name, f"unsupported patch type {errors.go_quote(response.patch_type)}")
        try:
            patched = json_patch(va.object, operations)
        except PatchError as err:
            raise errors.internal_error(str(err)) from None
        if not isinstance(patched, dict):
            raise errors.internal_error("json: cannot unmarshal into Go value of type object")
        t = va.target
        patched = self._typed(patched, va)
        # Compared in stored form both: the object before admission was not put into it everywhere.
        changed = patched != self._typed(json_copy(va.object), va)
        rest = self.store_of(t) if t.group_version == va.attributes.resource.group_version else None
        if rest is not None:
            rest.strategy.default(patched)
        va.object = patched
        va.dirty = True
        return changed

    @staticmethod
    def _typed(obj: Object, va: VersionedAttributes) -> Object:
        """The object as upstream decodes it into the kind's type: unknown fields dropped, wrong types refused
        (a custom resource is left as it is)."""
        t = va.target
        obj = {**obj, "apiVersion": t.api_version, "kind": t.kind}
        codec = codec_for(t.group, t.version, t.kind) if not t.custom else None
        if codec is None:
            return obj
        try:
            return codec.decode(obj)  # type: ignore[no-any-return]
        except DecodeError as err:
            raise errors.internal_error(str(err)) from None

    def _validate_again(self, a: Attributes) -> None:
        """What the registry's create or update validated before admission, on the object webhooks changed."""
        rest = self.store_of(a.resource)
        obj = a.object
        if rest is None or obj is None:
            return
        strategy, md = rest.strategy, obj.get("metadata")
        if not isinstance(md, dict):
            raise rest.invalid(a.name, [errors.required("metadata", "")])
        errs: list[Any]
        if a.operation == CREATE and not a.subresource:
            strategy.default(obj)
            errs = validate_object_meta(md, a.resource.namespaced, type(strategy).name_validator)
            errs += strategy.validate(obj)
        elif a.operation == UPDATE and a.old_object is not None:
            errs = validate_object_meta_update(md, a.old_object.get("metadata") or {})
            if not a.subresource:
                strategy.default(obj)
                errs += strategy.validate_update(obj, a.old_object)
            elif a.subresource == "status":
                errs += strategy.validate_status_update(obj, a.old_object)
        else:
            return
        if errs:
            raise rest.invalid(md.get("name") or a.name, errs)
