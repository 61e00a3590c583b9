"""The node lifecycle controller (upstream: pkg/controller/nodelifecycle)."""

from .node_lifecycle_controller import NodeLifecycleController

__all__ = ["NodeLifecycleController"]
