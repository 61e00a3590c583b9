"""The node IPAM controller (upstream: pkg/controller/nodeipam)."""

from .range_allocator import NodeIpamController, mask_sizes, parse_cluster_cidrs

__all__ = ["NodeIpamController", "mask_sizes", "parse_cluster_cidrs"]
