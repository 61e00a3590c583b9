"""The ClusterRole aggregation controller (clusterroleaggregation_controller.py)."""

from .clusterroleaggregation_controller import FIELD_MANAGER, ClusterRoleAggregationController

__all__ = ["FIELD_MANAGER", "ClusterRoleAggregationController"]
