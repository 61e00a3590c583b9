"""What plugins get from the framework (upstream: framework.Handle): the cycle's snapshot, read access to
other cluster objects, feature gates, the API client. `FrameworkHandle` is the one implementation; its
`objects` is an informer-backed lister in the running scheduler and a `StaticLister` over a scenario's objects
in `pyk8s scheduler evaluate` and in tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .features import DEFAULT_FEATURE_GATES
from .snapshot import Snapshot


class StaticLister:
    """Objects by resource plural ("namespaces", "persistentvolumeclaims", …) from plain lists."""

    def __init__(self, objects: dict[str, Iterable[dict[str, Any]]] | None = None) -> None:
        self._by_resource: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for resource, items in (objects or {}).items():
            for obj in items:
                self.add(resource, obj)

    def add(self, resource: str, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        self._by_resource.setdefault(resource, {})[(md.get("namespace", ""), md.get("name", ""))] = obj

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._by_resource.get(resource, {}).get((namespace, name))

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        items = self._by_resource.get(resource, {})
        return [o for (ns, _), o in items.items() if namespace is None or ns == namespace]


class FrameworkHandle:
    def __init__(
        self,
        snapshot: Snapshot | None = None,
        objects: Any = None,
        *,
        feature_gates: dict[str, bool] | None = None,
        client: Any = None,
        parallelism: int = 16,
    ) -> None:
        self.snapshot = snapshot if snapshot is not None else Snapshot()
        self.objects = objects if objects is not None else StaticLister()
        self.feature_gates = {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}
        self.client = client
        self.parallelism = parallelism
        self.framework: Any = None  # the Framework that owns this handle (preemption runs its filters)
        self.nominator: Any = None  # pods nominated to nodes (the scheduling queue), or None
        self.recorder: Any = None  # the profile's events.k8s.io EventRecorder, or None offline
        self.extenders: list[Any] = []  # the scheduler's HTTP extenders (preemption consults them)

    def record_event(
        self, regarding: dict[str, Any], related: dict[str, Any] | None, type_: str, reason: str, action: str, note: str
    ) -> None:
        """Record an event (upstream: Handle.EventRecorder().Eventf); nothing happens offline."""
        if self.recorder is not None:
            self.recorder.eventf(regarding, related, type_, reason, action, "%s", note)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        ns = self.objects.get("namespaces", "", namespace)
        return None if ns is None else (ns.get("metadata") or {}).get("labels") or {}
