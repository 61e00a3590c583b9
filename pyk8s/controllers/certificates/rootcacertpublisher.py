"""The root CA certificate publisher (upstream: pkg/controller/certificates/rootcacertpublisher/publisher.go,
`root-ca-certificate-publisher-controller`): a ConfigMap `kube-root-ca.crt` in every namespace holds the CA
bundle that verifies the API server (`ca.crt`), so that pods can trust `kubernetes.default.svc`. It is put back
whenever it is deleted or changed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...api.meta import json_copy
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


class RootCACertPublisher:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, root_ca: str) -> None:
        self.client = client
        self.root_ca = root_ca
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="root_ca_cert_publisher")
        self.namespaces = factory.informer_for("namespaces")
        self.config_maps = factory.informer_for("configmaps")
        self.namespaces.add_event_handler(
            on_add=lambda ns, _initial: self._enqueue(ns), on_update=lambda _o, ns: self._enqueue(ns)
        )
        self.config_maps.add_event_handler(
            on_update=lambda _o, cm: self._config_map_changed(cm), on_delete=self._config_map_changed
        )

    def _enqueue(self, ns: dict[str, Any]) -> None:
        self.queue.add(str((ns.get("metadata") or {}).get("name")))

    def _config_map_changed(self, obj: Any) -> None:
        cm = deleted_object(obj)
        md = cm.get("metadata") or {}
        if md.get("name") == ROOT_CA_CONFIG_MAP:
            self.queue.add(str(md.get("namespace")))

    async def run(self) -> None:
        await asyncio.gather(self.namespaces.wait_for_sync(), self.config_maps.wait_for_sync())
        await run_workers(queue_workers(self.queue, self.sync, "publish root CA to namespace"), [self.queue])

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.indexer.get_by_key(namespace)
        if ns is None or (ns.get("metadata") or {}).get("deletionTimestamp"):
            return
        data = {"ca.crt": self.root_ca}
        cm = self.config_maps.indexer.get_by_key(f"{namespace}/{ROOT_CA_CONFIG_MAP}")
        if cm is None:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIG_MAP, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data}  # fmt: skip
            try:
                await self.client.create("configmaps", body, namespace)
            except errors.AlreadyExists:
                pass
            except errors.StatusError as err:
                if not errors.has_status_cause(err, errors.NAMESPACE_TERMINATING_CAUSE):
                    raise
            return
        annotations = (cm.get("metadata") or {}).get("annotations") or {}
        if cm.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        fixed = json_copy(cm)
        fixed["data"] = data
        fixed["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION
        try:
            await self.client.update("configmaps", fixed, namespace)
        except errors.NotFound:
            pass
