"""The ValidatingAdmissionPolicy status controller (upstream: pkg/controller/validatingadmissionpolicystatus,
`validatingadmissionpolicy-status-controller`): once per generation of a policy it writes
`status.observedGeneration` and `status.typeChecking`.

Upstream's type checking compiles each expression against the schemas of the kinds the policy matches and
of its paramKind, and lists what does not check as `typeChecking.expressionWarnings`. pyk8s' CEL runtime has
no object types outside protobuf, so that check is not made: typeChecking is written empty (`{}`), as
upstream writes it for a policy whose expressions all check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..api import errors
from ..api.resources import TABLE
from ..client.cache import SharedInformerFactory
from ..client.rest import RESTClient
from ..client.workqueue import RateLimitingQueue
from .workers import queue_workers, run_workers

log = logging.getLogger(__name__)

CONTROLLER_NAME = "validatingadmissionpolicy-status-controller"
POLICIES = TABLE.get("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")


def needs_status(policy: Mapping[str, Any]) -> bool:
    generation = (policy.get("metadata") or {}).get("generation") or 0
    status = policy.get("status") or {}
    return status.get("observedGeneration") != generation or status.get("typeChecking") is None


class ValidatingAdmissionPolicyStatusController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        assert POLICIES is not None
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name=CONTROLLER_NAME)
        self.policies = factory.informer_for(POLICIES)
        self.policies.add_event_handler(
            on_add=lambda p, _initial: self._enqueue(p), on_update=lambda _old, p: self._enqueue(p)
        )

    def _enqueue(self, policy: Mapping[str, Any]) -> None:
        if needs_status(policy):
            self.queue.add(str(policy["metadata"]["name"]))

    async def run(self) -> None:
        await self.policies.wait_for_sync()
        tasks = queue_workers(self.queue, self.sync, "write the status of ValidatingAdmissionPolicy", self.workers)
        await run_workers(tasks, [self.queue])

    async def sync(self, name: str) -> None:
        cached = self.policies.indexer.get_by_key(name)
        if cached is None or not needs_status(cached):
            return
        policy = dict(cached)
        policy["status"] = {
            **(cached.get("status") or {}),
            "observedGeneration": cached["metadata"].get("generation") or 0,
            "typeChecking": {},
        }
        assert POLICIES is not None
        try:
            await self.client.update(POLICIES, policy, subresource="status", field_manager=CONTROLLER_NAME)
        except errors.NotFound:
            return
