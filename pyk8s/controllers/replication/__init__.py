"""The ReplicationController manager (upstream: pkg/controller/replication): the ReplicaSet controller run for
ReplicationControllers, whose selector is a plain label map and whose events come from
`replication-controller`."""

from __future__ import annotations

from ...client.cache import SharedInformerFactory
from ...client.rest import RESTClient
from ..replicaset import REPLICATION_CONTROLLER, ReplicaSetController


def replication_manager(
    client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5
) -> ReplicaSetController:
    return ReplicaSetController(client, factory, kind=REPLICATION_CONTROLLER, workers=workers)


__all__ = ["replication_manager"]
