"""The Node authorization mode: what kubelets may do, from the relationships between their node and the objects
its pods use (upstream: plugin/pkg/auth/authorizer/node), and how a node is recognised (pkg/auth/nodeidentifier).
"""

from __future__ import annotations

from .authorizer import NODE_LEASE_NAMESPACE, NODE_USER_PREFIX, NODES_GROUP, NodeAuthorizer, node_identity

__all__ = ["NODES_GROUP", "NODE_LEASE_NAMESPACE", "NODE_USER_PREFIX", "NodeAuthorizer", "node_identity"]
