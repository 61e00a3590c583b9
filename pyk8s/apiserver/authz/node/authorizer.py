"""The Node authorizer (upstream: plugin/pkg/auth/authorizer/node/node_authorizer.go, with the
AuthorizeNodeWithSelectors gate on as in v1.32): what a kubelet, user `system:node:<name>` in `system:nodes`,
may do. Secrets, configmaps, claims, volumes, attachments and service-account tokens only as the pods bound to
it use them (the graph); its own Node, Lease and CSINode; pods bound to it; everything else as the static
`system:node` rules say. It never denies: requests from anyone else, and what it does not allow, get no opinion.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ....api.errors import go_quote
from ....api.meta import Object
from ....storage.interface import DELETED
from ...authn import UserInfo
from ...informers import CacheFollower
from ...registry.rest import RESTStore
from .. import ALLOWED, NO_OPINION, NO_OPINION_DECISION, Attributes, Decision, Rules
from ..rbac.rules import rules_allow
from .graph import CONFIGMAP, POD, PV, PVC, RESOURCE_CLAIM, SECRET, SERVICE_ACCOUNT, VOLUME_ATTACHMENT, Graph
from .policy import node_rules

log = logging.getLogger("pyk8s.authz.node")

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
NODE_LEASE_NAMESPACE = "kube-node-lease"

# The watch caches the graph is built from: (group/version, plural) -> the graph's vertex type.
SOURCES = {
    ("v1", "pods"): POD,
    ("v1", "persistentvolumes"): PV,
    ("storage.k8s.io/v1", "volumeattachments"): VOLUME_ATTACHMENT,
}

# The resources the authorizer decides itself: (group, resource).
_SECRETS, _CONFIGMAPS = ("", "secrets"), ("", "configmaps")
_PVCS, _PVS = ("", "persistentvolumeclaims"), ("", "persistentvolumes")
_RESOURCE_CLAIMS = ("resource.k8s.io", "resourceclaims")
_VOLUME_ATTACHMENTS = ("storage.k8s.io", "volumeattachments")
_SERVICE_ACCOUNTS = ("", "serviceaccounts")
_LEASES = ("coordination.k8s.io", "leases")
_CSI_NODES = ("storage.k8s.io", "csinodes")
_NODES, _PODS = ("", "nodes"), ("", "pods")

_TYPE_NAMES = {SECRET: "secret", CONFIGMAP: "configmap", PVC: "pvc", PV: "pv", RESOURCE_CLAIM: "resourceclaim",
               VOLUME_ATTACHMENT: "volumeattachment", SERVICE_ACCOUNT: "serviceAccount", POD: "pod"}  # fmt: skip


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """(node name, whether the user is a node) (upstream: nodeidentifier's NodeIdentity): a node is a user named
    `system:node:<name>` in the group `system:nodes`; the name may be empty, which nothing allows."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.name[len(NODE_USER_PREFIX) :], True


def _no(reason: str = "") -> Decision:
    return Decision(NO_OPINION, reason) if reason else NO_OPINION_DECISION


def _unrelated(node: str) -> Decision:
    return _no(f"no relationship found between node '{node}' and this object")


class NodeAuthorizer:
    """`authorize` for node identities, from a graph of the pods, volumes and attachments in the watch caches."""

    def __init__(self, rest: Callable[[str, str], RESTStore] | None) -> None:
        """`rest(group_version, plural)` gives the stores to watch; None: no watches, the graph is fed through
        `observe` (tests)."""
        self.stores = {kind: rest(gv, plural) for (gv, plural), kind in SOURCES.items()} if rest else {}
        self.graph = Graph()
        self.rules = node_rules()
        self._follower = CacheFollower(self.stores, self.observe, self.graph.clear, "Node authorizer")

    # -- keeping the graph -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Build the graph from the watch caches; the watches that keep it current start here too."""
        await self._follower.start()

    async def run(self) -> None:
        """Follow the watches for ever (a node's request also takes what is queued first: see `sync`)."""
        await self._follower.run()

    def sync(self) -> None:
        """Apply the events already queued, so a kubelet sees a pod bound to it just before it asks."""
        self._follower.sync()

    def observe(self, kind: str, typ: str, obj: Object | None) -> None:
        """Take one change of a pod, persistent volume or volume attachment (tests feed objects this way)."""
        if obj is None:
            return
        md = obj.get("metadata") or {}
        if kind == POD:
            if typ == DELETED:
                self.graph.delete_pod(str(md.get("namespace") or ""), str(md.get("name") or ""))
            else:
                self.graph.put_pod(obj)
        elif kind == PV:
            if typ == DELETED:
                self.graph.delete_pv(str(md.get("name") or ""))
            else:
                self.graph.put_pv(obj)
        elif kind == VOLUME_ATTACHMENT:
            if typ == DELETED:
                self.graph.delete_volume_attachment(str(md.get("name") or ""))
            else:
                self.graph.put_volume_attachment(obj)

    # -- authorizing -----------------------------------------------------------------------------------

    def authorize(self, a: Attributes) -> Decision:
        node, is_node = node_identity(a.user)
        if not is_node:
            return NO_OPINION_DECISION
        if not node:
            return _no(f"unknown node for user {go_quote(a.user.name)}")
        self._follower.sync()
        if a.resource_request:
            gr = (a.api_group, a.resource)
            if gr == _SECRETS:
                return self._read_namespaced(node, SECRET, a)
            if gr == _CONFIGMAPS:
                return self._read_namespaced(node, CONFIGMAP, a)
            if gr == _PVCS:
                if a.subresource == "status":
                    return self._status_update(node, PVC, a)
                return self._get(node, PVC, a)
            if gr == _PVS:
                return self._get(node, PV, a)
            if gr == _RESOURCE_CLAIMS:
                return self._get(node, RESOURCE_CLAIM, a)
            if gr == _VOLUME_ATTACHMENTS:
                return self._get(node, VOLUME_ATTACHMENT, a)
            if gr == _SERVICE_ACCOUNTS:
                return self._create_token(node, a)
            if gr == _LEASES:
                return self._lease(node, a)
            if gr == _CSI_NODES:
                return self._csi_node(node, a)
            if gr == _NODES:
                return self._node(node, a)
            if gr == _PODS:
                return self._pod(node, a)
        return ALLOWED if rules_allow(a, self.rules) else NO_OPINION_DECISION

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """A node's rules cannot be listed (upstream answers the same): incomplete, with an error."""
        if node_identity(user)[1]:
            return Rules(incomplete=True, error="node authorizer does not support user rule resolution")
        return Rules()

    def _path(self, node: str, kind: str, a: Attributes) -> Decision:
        if not a.name:
            return _no("No Object name found")
        if self.graph.has_path(kind, a.namespace, a.name, node):
            return ALLOWED
        log.debug("NODE DENY: node %r cannot get %s %s/%s", node, _TYPE_NAMES[kind], a.namespace, a.name)
        return _unrelated(node)

    def _status_update(self, node: str, kind: str, a: Attributes) -> Decision:
        if a.verb not in ("update", "patch"):
            return _no("can only get/update/patch this type")
        if a.subresource != "status":
            return _no("can only update status subresource")
        return self._path(node, kind, a)

    def _get(self, node: str, kind: str, a: Attributes) -> Decision:
        if a.verb != "get":
            return _no("can only get individual resources of this type")
        if a.subresource:
            return _no("cannot get subresource")
        return self._path(node, kind, a)

    def _read_namespaced(self, node: str, kind: str, a: Attributes) -> Decision:
        if a.verb not in ("get", "list", "watch"):
            return _no("can only read resources of this type")
        if a.subresource:
            return _no("cannot read subresource")
        if not a.namespace:
            return _no("can only read namespaced object of this type")
        return self._path(node, kind, a)

    def _create_token(self, node: str, a: Attributes) -> Decision:
        if a.verb != "create" or not a.name:
            return _no("can only create tokens for individual service accounts")
        if a.subresource != "token":
            return _no("can only create token subresource of serviceaccount")
        if self.graph.has_path(SERVICE_ACCOUNT, a.namespace, a.name, node):
            return ALLOWED
        return _unrelated(node)

    @staticmethod
    def _lease(node: str, a: Attributes) -> Decision:
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a node lease")
        if a.namespace != NODE_LEASE_NAMESPACE:
            return _no(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        # A create carries no name here: NodeRestriction checks the object's.
        if a.verb != "create" and a.name != node:
            return _no("can only access node lease with the same name as the requesting node")
        return ALLOWED

    @staticmethod
    def _csi_node(node: str, a: Attributes) -> Decision:
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a CSINode")
        if a.subresource:
            return _no("cannot authorize CSINode subresources")
        if a.verb != "create" and a.name != node:
            return _no("can only access CSINode with the same name as the requesting node")
        return ALLOWED

    @staticmethod
    def _node(node: str, a: Attributes) -> Decision:
        if not a.subresource:
            if a.verb in ("create", "update", "patch"):
                return ALLOWED  # NodeRestriction keeps a node to its own object
            if a.verb in ("get", "list", "watch"):
                # By name, not by the graph: a kubelet reads its Node before it has created it.
                if a.name == node:
                    return ALLOWED
                if not a.name:
                    return _no(f"node '{node}' cannot read all nodes, only its own Node object")
                return _no(f"node '{node}' cannot read '{a.name}', only its own Node object")
        elif a.subresource == "status" and a.verb in ("update", "patch"):
            return ALLOWED
        return NO_OPINION_DECISION

    def _pod(self, node: str, a: Attributes) -> Decision:
        if not a.subresource:
            if a.verb == "get":
                return self._get(node, POD, a)
            if a.verb in ("list", "watch"):
                for req in a.field_selector:
                    if req.field == "spec.nodeName" and req.op == "=" and req.value == node:
                        return ALLOWED
                if a.name:  # one pod, named by a metadata.name field selector
                    return self._path(node, POD, a)
                return _no("can only list/watch pods with spec.nodeName field selector")
            if a.verb in ("create", "delete"):
                return ALLOWED  # mirror pods; NodeRestriction keeps a node to pods bound to it
        elif a.subresource == "status":
            if a.verb in ("update", "patch"):
                return ALLOWED
        elif a.subresource == "eviction" and a.verb == "create":
            return ALLOWED
        return NO_OPINION_DECISION
