"""The ClusterRole aggregation controller (upstream:
pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go, `clusterrole-aggregation-controller`).

A ClusterRole with an `aggregationRule` holds the rules of every other ClusterRole one of its
`clusterRoleSelectors` matches: selector by selector, the matching roles sorted by name (the role itself
skipped), their rules concatenated without repeats. The controller writes them by server-side apply as field
manager `clusterrole-aggregation-controller` with force, falling back to an update when the server does not take
apply patches (415). Any ClusterRole's change may change any aggregate, so every change queues every aggregated
role, as upstream does.
"""

from __future__ import annotations

import logging
from typing import Any

from ...api import errors
from ...api.selectors import label_selector_from_object
from ...client.cache import SharedInformerFactory
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

FIELD_MANAGER = "clusterrole-aggregation-controller"
RESOURCE = "clusterroles"
DEFAULT_WORKERS = 5  # upstream's start function runs five

Rule = dict[str, Any]


def _semantic(rule: Rule) -> dict[str, Any]:
    """A rule as semantic equality sees it: an empty list is the same as none."""
    return {k: v for k, v in rule.items() if v not in (None, [], {})}


def aggregated_rules(role: dict[str, Any], all_roles: list[dict[str, Any]]) -> list[Rule]:
    """The rules `role`'s aggregationRule selects, in upstream's order (upstream: syncClusterRole)."""
    name = (role.get("metadata") or {}).get("name")
    rules: list[Rule] = []
    seen: list[dict[str, Any]] = []
    for selector_obj in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        selector = label_selector_from_object(selector_obj)
        matched = [r for r in all_roles if selector.matches((r.get("metadata") or {}).get("labels"))]
        for other in sorted(matched, key=lambda r: str((r.get("metadata") or {}).get("name"))):
            if (other.get("metadata") or {}).get("name") == name:
                continue
            for rule in other.get("rules") or []:
                key = _semantic(rule)
                if key not in seen:
                    seen.append(key)
                    rules.append(rule)
    return rules


class ClusterRoleAggregationController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = DEFAULT_WORKERS) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="ClusterRoleAggregator")
        self.roles = factory.informer_for(RESOURCE)
        self.roles.add_event_handler(
            on_add=lambda _obj, _initial: self.enqueue(),
            on_update=lambda _old, _new: self.enqueue(),
            on_delete=lambda _obj: self.enqueue(),
        )

    def enqueue(self) -> None:
        for role in self.roles.indexer.list():
            if role.get("aggregationRule") is not None:
                self.queue.add(str(role["metadata"]["name"]))

    async def run(self) -> None:
        await self.roles.wait_for_sync()
        await run_workers(
            queue_workers(self.queue, self.sync_cluster_role, "sync aggregated ClusterRole", self.workers),
            [self.queue],
        )

    async def sync_cluster_role(self, name: str) -> None:
        role = self.roles.indexer.get_by_key(name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.roles.indexer.list())
        if [_semantic(r) for r in rules] == [_semantic(r) for r in role.get("rules") or []]:
            return
        try:
            await self._apply(name, rules)
        except errors.StatusError as err:
            if err.code != 415:
                raise
            await self._update(role, rules)

    async def _apply(self, name: str, rules: list[Rule]) -> None:
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                "rules": rules}  # fmt: skip
        await self.client.patch(RESOURCE, name, body, patch_type="apply", field_manager=FIELD_MANAGER, force=True)

    async def _update(self, role: dict[str, Any], rules: list[Rule]) -> None:
        updated = dict(role)
        updated["rules"] = rules
        await self.client.update(RESOURCE, updated)
