"""Which autoscalers select which pods (upstream: the controller's hpaSelectors, a selectors.BiMultimap), to
refuse scaling when one pod is under several autoscalers (`AmbiguousSelector`).

An autoscaler is registered when it is first seen, selecting nothing until a sync reads its target's selector,
and forgotten when deleted; only registered autoscalers get their selector recorded, so a sync racing a deletion
does not bring a deleted one back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...api.selectors import LabelSelector


class HPASelectors:
    def __init__(self) -> None:
        # `namespace/name` -> its target's selector; None selects nothing (not yet known).
        self._selectors: dict[str, LabelSelector | None] = {}

    def register(self, key: str) -> None:
        self._selectors.setdefault(key, None)

    def forget(self, key: str) -> None:
        self._selectors.pop(key, None)

    def put(self, key: str, selector: LabelSelector) -> None:
        if key in self._selectors:
            self._selectors[key] = selector

    def registered(self, key: str) -> bool:
        return key in self._selectors

    def controlling(self, pods: Iterable[Mapping[str, Any]]) -> list[str]:
        """The keys of every autoscaler selecting any of `pods`, each once, sorted."""
        found: set[str] = set()
        for pod in pods:
            md = pod.get("metadata") or {}
            namespace, labels = str(md.get("namespace") or ""), md.get("labels") or {}
            for key, selector in self._selectors.items():
                if selector is not None and key.partition("/")[0] == namespace and selector.matches(labels):
                    found.add(key)
        return sorted(found)
