"""The static rules every node gets (upstream: bootstrappolicy.NodeRules, the rules of the `system:node`
ClusterRole with v1.32's default feature gates). The Node authorizer asks them for whatever its graph does not
decide; the bootstrap policy, when it is in the tree, is their source."""

from __future__ import annotations

from typing import Any

Rule = dict[str, Any]

_READ = ["get", "list", "watch"]


def _rule(verbs: list[str], group: str, *resources: str) -> Rule:
    return {"verbs": list(verbs), "apiGroups": [group], "resources": list(resources)}


NODE_RULES: tuple[Rule, ...] = (
    # checking API access: creates that change nothing
    _rule(["create"], "authentication.k8s.io", "tokenreviews"),
    _rule(["create"], "authorization.k8s.io", "subjectaccessreviews", "localsubjectaccessreviews"),
    # the service lister that fills containers' environment
    _rule(_READ, "", "services"),
    # registering its Node and reporting status (NodeRestriction keeps a node to its own)
    _rule(["create", "get", "list", "watch"], "", "nodes"),
    _rule(["update", "patch"], "", "nodes/status"),
    _rule(["update", "patch"], "", "nodes"),
    _rule(["create", "update", "patch"], "", "events"),
    _rule(_READ, "", "pods"),
    # mirror pods, pod status and evictions (NodeRestriction keeps a node to pods bound to it)
    _rule(["create", "delete"], "", "pods"),
    _rule(["update", "patch"], "", "pods/status"),
    _rule(["create"], "", "pods/eviction"),
    # volumes and environment (the Node authorizer keeps a node to what its pods use)
    _rule(_READ, "", "secrets", "configmaps"),
    _rule(["get"], "", "persistentvolumeclaims", "persistentvolumes"),
    _rule(["get"], "", "endpoints"),
    # rotating its own client certificate
    _rule(["create", "get", "list", "watch"], "certificates.k8s.io", "certificatesigningrequests"),
    _rule(["get", "create", "update", "patch", "delete"], "coordination.k8s.io", "leases"),
    _rule(["get"], "storage.k8s.io", "volumeattachments"),
    _rule(["create"], "", "serviceaccounts/token"),
    _rule(["get", "update", "patch"], "", "persistentvolumeclaims/status"),
    _rule(["get", "watch", "list"], "storage.k8s.io", "csidrivers"),
    _rule(["get", "create", "update", "patch", "delete"], "storage.k8s.io", "csinodes"),
    _rule(_READ, "node.k8s.io", "runtimeclasses"),
)


def node_rules() -> list[Rule]:
    """The `system:node` ClusterRole's rules: the bootstrap policy's when it is in the tree, else ours."""
    try:
        from ..rbac import bootstrap_policy  # type: ignore[attr-defined]
    except ImportError:
        return list(NODE_RULES)
    for getter in ("node_rules", "NODE_RULES"):
        found = getattr(bootstrap_policy, getter, None)
        if callable(found):
            return list(found())
        if isinstance(found, list | tuple):
            return list(found)
    roles = getattr(bootstrap_policy, "cluster_roles", None)
    for role in roles() if callable(roles) else []:
        if isinstance(role, dict) and (role.get("metadata") or {}).get("name") == "system:node":
            return list(role.get("rules") or [])
    return list(NODE_RULES)
