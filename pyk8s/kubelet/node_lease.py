"""A node's heartbeat Lease, as the kubelet's lease controller keeps it (upstream:
component-helpers/apimachinery/lease/controller.go, pkg/kubelet/util/nodelease.go).

The Lease lives in `kube-node-lease` under the node's name, held by the node, 40 s long, owned by the Node
object. `NodeLease.renew()` is one sync of upstream's controller: the first call reads the Lease (creating it
if missing), later calls update the cached copy with a new renewTime; a conflict re-reads it; at most
`MAX_UPDATE_RETRIES` tries. The renewal period is a quarter of the duration (10 s) with upstream's jitter.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ..api import errors
from ..api.meta import rfc3339_micro
from ..client.rest import RESTClient

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40  # upstream nodeLeaseDurationSeconds
RENEW_INTERVAL_FRACTION = 0.25  # upstream nodeLeaseRenewIntervalFraction: 10 s
RENEW_JITTER = 0.04  # upstream JitterUntil factor
MAX_UPDATE_RETRIES = 5  # upstream maxUpdateRetries
_LEASES = "leases"


def renew_interval(rng: random.Random | None = None) -> float:
    """Seconds until the next renewal: 10 s stretched by up to 4%, as upstream's JitterUntil."""
    base = LEASE_DURATION_SECONDS * RENEW_INTERVAL_FRACTION
    return base * (1 + (rng or random).random() * RENEW_JITTER)


class NodeLease:
    """The Lease of node `node_name`, renewed through `client`. `owner()` gives the Node's uid once it is
    known (the owner reference is added then, as upstream's SetNodeOwnerFunc)."""

    def __init__(self, client: RESTClient, node_name: str, owner: Callable[[], str | None]) -> None:
        self.client = client
        self.node_name = node_name
        self._owner = owner
        self._lease: dict[str, Any] | None = None

    def _new_lease(self, base: dict[str, Any] | None) -> dict[str, Any]:
        lease: dict[str, Any] = dict(base) if base is not None else {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.node_name, "namespace": NODE_LEASE_NAMESPACE},
        }  # fmt: skip
        lease["metadata"] = dict(lease.get("metadata") or {})
        lease["spec"] = {
            **(lease.get("spec") or {}),
            "holderIdentity": self.node_name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": rfc3339_micro(),
        }
        uid = self._owner()
        if uid and not lease["metadata"].get("ownerReferences"):
            lease["metadata"]["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": uid}
            ]
        return lease

    def _renewed(self, lease: dict[str, Any]) -> dict[str, Any]:
        """The cached Lease (the server's last answer, ours alone) with a new renewTime: changed in place, as
        5,000 nodes renew 500 times a second and a copy of it each time is work for nothing."""
        spec = lease.get("spec")
        md = lease.get("metadata")
        if (
            not isinstance(spec, dict)
            or not isinstance(md, dict)
            or spec.get("holderIdentity") != self.node_name
            or spec.get("leaseDurationSeconds") != LEASE_DURATION_SECONDS
            or not md.get("ownerReferences")
        ):
            return self._new_lease(lease)  # someone else changed it, or the owner is not set yet: the full path
        spec["renewTime"] = rfc3339_micro()
        return lease

    async def renew(self) -> None:
        """One renewal; raises the API error of the last try when none succeeds."""
        if self._lease is None:
            await self._ensure()
            return
        for attempt in range(MAX_UPDATE_RETRIES):
            try:
                self._lease = await self.client.update(_LEASES, self._renewed(self._lease), NODE_LEASE_NAMESPACE)
                return
            except (errors.Conflict, errors.NotFound):
                if attempt == MAX_UPDATE_RETRIES - 1:
                    raise
                await self._ensure()
                return

    async def _ensure(self) -> None:
        """Read the Lease, creating it if missing (upstream backoffEnsureLease's one try), then renew it."""
        try:
            current: dict[str, Any] | None = await self.client.get(_LEASES, self.node_name, NODE_LEASE_NAMESPACE)
        except errors.NotFound:
            current = None
        if current is None:
            try:
                self._lease = await self.client.create(_LEASES, self._new_lease(None), NODE_LEASE_NAMESPACE)
                return
            except errors.AlreadyExists:
                current = await self.client.get(_LEASES, self.node_name, NODE_LEASE_NAMESPACE)
        self._lease = await self.client.update(_LEASES, self._new_lease(current), NODE_LEASE_NAMESPACE)
