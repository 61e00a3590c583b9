"""How workload controllers create and delete their pods (upstream: pkg/controller/controller_utils.go,
RealPodControl, GetPodFromTemplate and slowStartBatch).

A pod made from a template gets the template's labels, annotations, finalizers and spec, `generateName`
`<owner>-`, and a controller owner reference to its owner. Every create and delete is reported as an event on
the owner with upstream's reasons and messages (`SuccessfulCreate` "Created pod: x", `FailedCreate`
"Error creating: ...", `SuccessfulDelete`, `FailedDelete`). Many creations go in slow-start batches (1, 2, 4, ...)
that stop at the first failure, so that an owner whose pods are all refused (a quota, a bad template) sends one
doomed request rather than hundreds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..api import errors
from ..api.meta import json_copy
from ..api.validation import name_is_dns_subdomain
from ..client.event_recorder import CoreEventRecorder
from ..client.rest import RESTClient

log = logging.getLogger(__name__)

SLOW_START_INITIAL_BATCH_SIZE = 1

SUCCESSFUL_CREATE = "SuccessfulCreate"
FAILED_CREATE = "FailedCreate"
SUCCESSFUL_DELETE = "SuccessfulDelete"
FAILED_DELETE = "FailedDelete"


def pods_prefix(owner_name: str) -> str:
    """`<owner>-`, unless that is not a valid name prefix (then the owner's name alone)."""
    prefix = f"{owner_name}-"
    return owner_name if name_is_dns_subdomain(prefix, True) else prefix


def pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any],
                      controller_ref: Mapping[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """The pod an owner creates from its pod template (upstream: GetPodFromTemplate)."""
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {"generateName": pods_prefix(str((owner.get("metadata") or {}).get("name") or ""))}
    for key in ("labels", "annotations"):
        if tmeta.get(key):
            meta[key] = dict(tmeta[key])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    if controller_ref is not None:
        meta["ownerReferences"] = [dict(controller_ref)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": json_copy(template.get("spec") or {})}


class PodControl:
    """Creates, deletes and patches pods for owners, recording events on the owner (upstream: RealPodControl)."""

    def __init__(self, client: RESTClient, recorder: CoreEventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def create_pods(self, namespace: str, template: Mapping[str, Any], owner: Mapping[str, Any],
                          controller_ref: Mapping[str, Any]) -> dict[str, Any]:  # fmt: skip
        return await self.create_pod(namespace, pod_from_template(template, owner, controller_ref), owner)

    async def create_pod(self, namespace: str, pod: dict[str, Any], owner: Mapping[str, Any]) -> dict[str, Any]:
        if not (pod.get("metadata") or {}).get("labels"):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self.client.create("pods", pod, namespace)
        except errors.StatusError as err:
            # A namespace being deleted refuses every create: that is expected, not worth an event.
            if not errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                self.recorder.event(owner, "Warning", FAILED_CREATE, f"Error creating: {err.message}")
            raise
        log.debug("controller %s created pod %s", (owner.get("metadata") or {}).get("name"),
                  created["metadata"]["name"])  # fmt: skip
        self.recorder.event(owner, "Normal", SUCCESSFUL_CREATE, f"Created pod: {created['metadata']['name']}")
        return created

    async def delete_pod(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        try:
            await self.client.delete("pods", name, namespace)
        except errors.NotFound:
            log.info("pod %s/%s has already been deleted", namespace, name)
            raise
        except errors.StatusError as err:
            self.recorder.event(owner, "Warning", FAILED_DELETE, f"Error deleting: {err.message}")
            raise
        self.recorder.event(owner, "Normal", SUCCESSFUL_DELETE, f"Deleted pod: {name}")

    async def delete_pods(self, namespace: str, pods: Sequence[Mapping[str, Any]], owner: Mapping[str, Any],
                          not_deleted: Callable[[Mapping[str, Any]], None]) -> None:  # fmt: skip
        """Delete `pods` at once; `not_deleted(pod)` for each one this did not delete (gone already, or refused),
        so that the caller stops expecting it. Raises the first refusal."""

        async def one(pod: Mapping[str, Any]) -> None:
            try:
                await self.delete_pod(namespace, str((pod.get("metadata") or {}).get("name")), owner)
            except errors.StatusError as err:
                not_deleted(pod)
                if not isinstance(err, errors.NotFound):
                    raise

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            raise failed

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        return await self.client.patch("pods", name, patch, namespace)


async def slow_start_batch(count: int, initial_batch_size: int, fn: Callable[[], Awaitable[Any]]) -> tuple[int, BaseException | None]:  # fmt: skip
    """Call `fn` `count` times: in batches of `initial_batch_size`, then twice as many each time, the calls of a
    batch concurrently. After a batch with a failure no further batch starts. Answers (the calls that succeeded,
    the first error)."""
    remaining, successes = count, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        successes += batch - len(failed)
        if failed:
            return successes, failed[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None
