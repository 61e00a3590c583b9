"""The NodeResources plugins (upstream: plugins/noderesources): NodeResourcesFit and
NodeResourcesBalancedAllocation."""

from __future__ import annotations

from .balanced_allocation import NodeResourcesBalancedAllocation
from .fit import NodeResourcesFit

__all__ = ["NodeResourcesBalancedAllocation", "NodeResourcesFit"]
