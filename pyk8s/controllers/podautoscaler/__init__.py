"""The horizontal pod autoscaler (upstream: pkg/controller/podautoscaler): the controller (horizontal.py), each
metric's proposal (metric_proposals.py), the replica arithmetic (replica_calculator.py), stabilization and scaling
policies (normalization.py) and the metrics client (metrics/)."""

from .horizontal import HorizontalController

__all__ = ["HorizontalController"]
