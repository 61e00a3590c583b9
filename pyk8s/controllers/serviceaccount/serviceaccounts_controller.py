"""The ServiceAccounts controller (upstream: pkg/controller/serviceaccount/serviceaccounts_controller.go,
`serviceaccount-controller`): every active namespace has a ServiceAccount named `default`, created when the
namespace appears and again whenever it is deleted. No token Secret is made (as upstream since 1.24)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

DEFAULT_SERVICE_ACCOUNTS = ("default",)


class ServiceAccountsController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *,
                 service_accounts: tuple[str, ...] = DEFAULT_SERVICE_ACCOUNTS) -> None:  # fmt: skip
        self.client = client
        self.service_accounts = service_accounts
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="serviceaccount")
        self.namespaces = factory.informer_for("namespaces")
        self.accounts = factory.informer_for("serviceaccounts")
        self.namespaces.add_event_handler(
            on_add=lambda ns, _initial: self._enqueue_namespace(ns),
            on_update=lambda _o, ns: self._enqueue_namespace(ns),
        )
        self.accounts.add_event_handler(on_delete=self._account_deleted)

    def _enqueue_namespace(self, ns: dict[str, Any]) -> None:
        self.queue.add(str((ns.get("metadata") or {}).get("name")))

    def _account_deleted(self, obj: Any) -> None:
        sa = deleted_object(obj)
        md = sa.get("metadata") or {}
        if md.get("name") in self.service_accounts:
            self.queue.add(str(md.get("namespace")))

    async def run(self) -> None:
        await asyncio.gather(self.namespaces.wait_for_sync(), self.accounts.wait_for_sync())
        await run_workers(queue_workers(self.queue, self.sync, "sync namespace's service accounts"), [self.queue])

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.indexer.get_by_key(namespace)
        if ns is None or (ns.get("status") or {}).get("phase", "Active") != "Active":
            return  # gone, or terminating: nothing may be created there
        for name in self.service_accounts:
            if self.accounts.indexer.get_by_key(f"{namespace}/{name}") is not None:
                continue
            account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
            try:
                await self.client.create("serviceaccounts", account, namespace)
            except errors.AlreadyExists:
                continue
            except errors.StatusError as err:
                if errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                    return
                raise
