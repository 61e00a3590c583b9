"""The ReplicaSet controller (replica_set.py) and its status arithmetic (replica_set_utils.py)."""

from .replica_set import REPLICA_SET, REPLICATION_CONTROLLER, ReplicaSetController

__all__ = ["REPLICATION_CONTROLLER", "REPLICA_SET", "ReplicaSetController"]
