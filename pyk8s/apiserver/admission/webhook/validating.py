"""The ValidatingAdmissionWebhook plugin: every ValidatingWebhookConfiguration webhook that matches a write is
called, all of them at once, after the mutating phase; any refusal refuses the write (upstream: apiserver
pkg/admission/plugin/webhook/validating plugin.go and dispatcher.go).

When several webhooks refuse, the error that came back first is the one reported, as upstream's. A webhook
that cannot be called fails the request with a 500 under failurePolicy Fail, and is skipped under Ignore (the
audit annotation `failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>` says so).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ....api import errors
from ....api.meta import Object
from ...warning import add_audit_annotation, add_warning
from .. import Attributes
from .configuration import GROUP_VERSION, VALIDATING, WebhookSource
from .dispatch import WebhookRejection, call_hook, failed_open_annotation
from .errors import CallingWebhookError, failed_closed
from .generic import CallResult, Host, Invocation, Versioner, Webhook, is_exempt

log = logging.getLogger(__name__)

FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"


def cached_configurations(host: Host, plural: str) -> Callable[[], list[Object]]:
    def list_configurations() -> list[Object]:
        rest = host.stores.get((GROUP_VERSION, plural))
        if rest is None or not rest.cacher.ready:
            return []
        entries, _ = rest.cacher.list(rest.resource.collection_key(""))
        return [en.obj for en in entries]

    return list_configurations


class ValidatingAdmissionWebhook(Webhook):
    name = "ValidatingAdmissionWebhook"

    def __init__(self, host: Host) -> None:
        super().__init__(host, WebhookSource(cached_configurations(host, VALIDATING), mutating=False))

    async def admit(self, a: Attributes) -> None:
        return None

    async def validate(self, a: Attributes) -> None:
        if is_exempt(a):
            return
        hooks = self.source.webhooks()
        if not hooks:
            return
        ns_labels = await self.namespace_labels(a)
        versioner = Versioner(self, a)
        relevant: list[Invocation] = []
        for hook in hooks:
            invocation = await self.should_call_hook(hook, a, ns_labels, versioner)
            if invocation is not None:
                await versioner.get(invocation)
                relevant.append(invocation)
        if not relevant:
            return
        found: list[Exception] = []  # in the order the calls finish
        results = [CallResult() for _ in relevant]

        async def call(i: int, invocation: Invocation) -> None:
            hook = invocation.webhook
            try:
                await call_hook(self, hook, invocation, await versioner.get(invocation), False, results[i])
            except CallingWebhookError as err:
                if hook.failure_policy == "Ignore":
                    log.warning("Failed calling webhook, failing open %s: %s", hook.name, err)
                    results[i].audit_annotations[failed_open_annotation(FAILED_OPEN_PREFIX, 0, i)] = hook.name
                    return
                log.warning("Failed calling webhook, failing closed %s: %s", hook.name, err)
                found.append(failed_closed(err))
            except WebhookRejection as err:
                found.append(err.status)
            except errors.StatusError as err:
                found.append(err)
            except Exception as err:  # a bug here must refuse the write, not let it through
                log.exception("validating webhook %s", hook.name)
                found.append(errors.internal_error(f"ValidatingAdmissionWebhook/{hook.name} has panicked: {err}"))

        await asyncio.gather(*(call(i, inv) for i, inv in enumerate(relevant)))
        # Added here, in the request's own task: the calls ran in tasks of their own.
        for result in results:
            for w in result.warnings:
                add_warning(w)
            for key, value in result.audit_annotations.items():
                add_audit_annotation(key, value)
        if found:
            raise found[0]
