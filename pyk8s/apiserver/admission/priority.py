"""Priority (upstream: plugin/pkg/admission/priority/admission.go): a new pod's `priorityClassName` is resolved to
`spec.priority` and `spec.preemptionPolicy` (no name: the global default class, the lowest-valued one if several
claim it, else priority 0 and PreemptLowerPriority); a pod may not state a priority that differs from its class's.
Updates keep the priority the pod was created with. Only one PriorityClass may be the global default.

`ensure_system_priority_classes` is upstream's `scheduling/bootstrap-system-priority-classes` post-start hook:
`system-node-critical` and `system-cluster-critical` exist in every cluster.
"""

from __future__ import annotations

import logging
from typing import Any

from ...api import errors
from ...api.meta import Object
from . import CREATE, UPDATE, Attributes, reads
from .errors import new_forbidden

log = logging.getLogger(__name__)

DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0
SYSTEM_CRITICAL_PRIORITY = 2 * 1_000_000_000
SYSTEM_PRIORITY_CLASSES = (
    ("system-node-critical", SYSTEM_CRITICAL_PRIORITY + 1000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", SYSTEM_CRITICAL_PRIORITY,
     "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
)  # fmt: skip


def default_priority_class(classes: list[Object]) -> Object | None:
    """The global default; when a race left several, the one with the lowest value (upstream)."""
    found: Object | None = None
    for pc in classes:
        if pc.get("globalDefault") is True and (
            found is None or int(found.get("value") or 0) > int(pc.get("value") or 0)
        ):
            found = pc
    return found


class Priority:
    name = "Priority"

    def __init__(self, host: Any) -> None:
        self.host = host

    def _classes(self) -> list[Object]:
        return reads.cached_list(self.host, "scheduling.k8s.io/v1", "priorityclasses")

    async def admit(self, a: Attributes) -> None:
        if a.subresource or a.object is None or a.operation not in (CREATE, UPDATE):
            return
        if a.resource.group == "" and a.resource.plural == "pods":
            await self._admit_pod(a)

    async def _admit_pod(self, a: Attributes) -> None:
        assert a.object is not None
        spec = a.object.get("spec")
        if not isinstance(spec, dict):
            raise errors.bad_request("resource was marked with kind Pod but was unable to be converted")
        if a.operation == UPDATE:
            old = (a.old_object or {}).get("spec") or {}
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old.get(key) is not None:
                    spec[key] = old[key]
            return
        class_name = spec.get("priorityClassName") or ""
        if not class_name:
            pc = default_priority_class(self._classes())
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
                priority, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy")
            else:
                priority, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, "PreemptLowerPriority"
        else:
            pc = await reads.get(self.host, "scheduling.k8s.io/v1", "priorityclasses", "", class_name)
            if pc is None:
                raise new_forbidden(a, f"no PriorityClass with name {class_name} was found")
            priority, policy = int(pc.get("value") or 0), pc.get("preemptionPolicy")
        if spec.get("priority") is not None and spec["priority"] != priority:
            raise new_forbidden(a, (
                f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
                f"priority admission controller computed {priority} from the given PriorityClass name"
            ))  # fmt: skip
        spec["priority"] = priority
        if policy:
            if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
                raise new_forbidden(a, (
                    f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
                    f"spec; priority admission controller computed {policy} from the given PriorityClass name"
                ))  # fmt: skip
            spec["preemptionPolicy"] = policy

    async def validate(self, a: Attributes) -> None:
        if a.subresource or a.object is None or a.operation not in (CREATE, UPDATE):
            return
        if a.resource.group != "scheduling.k8s.io" or a.resource.plural != "priorityclasses":
            return
        if a.object.get("globalDefault") is not True:
            return
        current = default_priority_class(self._classes())
        if current is None:
            return
        current_name = current["metadata"]["name"]
        if a.operation == CREATE or current_name != (a.object.get("metadata") or {}).get("name"):
            raise new_forbidden(
                a, f"PriorityClass {current_name} is already marked as default. Only one default can exist"
            )


async def ensure_system_priority_classes(rest: Any, ctx: Any) -> None:
    """Create the system PriorityClasses that are missing (`rest`: the priorityclasses RESTStore; `ctx`: the
    API server's own Context). Upstream's hook leaves an existing one alone."""
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
              "value": value, "description": description}  # fmt: skip
        try:
            await rest.create("", pc, ctx)
            log.info("created PriorityClass %s with value %d", name, value)
        except errors.StatusError as err:
            if err.code != 409:
                raise
