"""NodeRestriction (upstream: plugin/pkg/admission/noderestriction/admission.go): a kubelet may write only what
concerns its own node. Requests from users other than nodes (`system:node:<name>` in `system:nodes`) pass.

For a node: pods only as mirror pods bound to it, owned by its Node and naming no other object; pod status and
evictions of its own pods; its own Node, without changing its taints, ownerReferences, configSource or labels
outside the kubelet's set; PVC status only in `capacity` and `conditions` (and the expansion-recovery fields);
tokens only bound to pods on it; leases only its own in `kube-node-lease`; its own CSINode. The Node authorizer
lets these writes through and leaves this plugin to look at the objects, which it cannot see.
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.meta import Object
from ..authz.node import NODE_LEASE_NAMESPACE, node_identity
from ..authz.node.graph import MIRROR_POD_ANNOTATION, pod_configmap_names, pod_secret_names
from . import CREATE, DELETE, UPDATE, Attributes, reads
from .errors import new_forbidden

PLUGIN_NAME = "NodeRestriction"

# Labels a kubelet may set on its own Node (upstream: k8s.io/kubelet/pkg/apis.IsKubeletLabel).
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})  # fmt: skip
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
NODE_RESTRICTION_LABEL_NAMESPACE = "node-restriction.kubernetes.io"  # v1.LabelNamespaceNodeRestriction

# PVC status fields a node may change: capacity and conditions, and with RecoverVolumeExpansionFailure (beta
# and on in v1.32) the allocated resources and their statuses.
PVC_STATUS_FIELDS = ("capacity", "conditions", "allocatedResources", "allocatedResourceStatuses")


def _label_namespace(key: str) -> str:
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def _in_namespace(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(key: str) -> bool:
    if key in KUBELET_LABELS:
        return True
    ns = _label_namespace(key)
    return any(_in_namespace(ns, allowed) for allowed in KUBELET_LABEL_NAMESPACES)


def is_kubernetes_label(key: str) -> bool:
    ns = _label_namespace(key)
    return _in_namespace(ns, "kubernetes.io") or _in_namespace(ns, "k8s.io")


def modified_labels(new: dict[str, str], old: dict[str, str]) -> set[str]:
    """The label keys added, removed or changed between two label maps."""
    return {k for k in new.keys() | old.keys() if new.get(k) != old.get(k) or (k in new) != (k in old)}


def forbidden_labels(keys: set[str]) -> list[str]:
    """The keys among `keys` a node may not set: node-restriction.kubernetes.io ones, and kubernetes.io or k8s.io
    ones outside the kubelet's set; sorted."""
    out = set()
    for key in keys:
        if _in_namespace(_label_namespace(key), NODE_RESTRICTION_LABEL_NAMESPACE):
            out.add(key)
        if is_kubernetes_label(key) and not is_kubelet_label(key):
            out.add(key)
    return sorted(out)


def _labels(obj: Object | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _spec(obj: Object | None) -> dict[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _meta(obj: Object | None) -> dict[str, Any]:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, dict) else {}


def _semantic(value: Any) -> Any:
    """A value as apiequality.Semantic compares it: an empty map, list or string is the same as none."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _diff(old: Any, new: Any, path: str = "") -> list[str]:
    """What changed, one `-`/`+` line pair per differing leaf (upstream prints go-cmp's Diff of the claims; this
    names the same fields in a plainer form)."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines: list[str] = []
        for k in sorted(old.keys() | new.keys()):
            lines += _diff(old.get(k), new.get(k), f"{path}.{k}" if path else k)
        return lines
    if old == new:
        return []
    out = []
    if old is not None:
        out.append(f"-\t{path}: {errors.go_value(old)}")
    if new is not None:
        out.append(f"+\t{path}: {errors.go_value(new)}")
    return out


class NodeRestriction:
    name = PLUGIN_NAME

    def __init__(self, host: Any) -> None:
        self.host = host  # the API server: its stores give the pods and nodes this plugin looks up

    async def validate(self, a: Attributes) -> None:
        return None  # a mutating plugin only, as upstream's (its DELETE checks run in the mutating phase)

    async def admit(self, a: Attributes) -> None:
        if a.operation not in (CREATE, UPDATE, DELETE):
            return
        node, is_node = node_identity(a.user)
        if not is_node:
            return
        if not node:
            raise new_forbidden(a, f"could not determine node from user {errors.go_quote(a.user.name)}")
        gr = (a.resource.group, a.resource.plural)
        if gr == ("", "pods"):
            if not a.subresource:
                await self._pod(node, a)
            elif a.subresource == "status":
                self._pod_status(node, a)
            elif a.subresource == "eviction":
                await self._pod_eviction(node, a)
            else:
                raise new_forbidden(a, f"unexpected pod subresource {errors.go_quote(a.subresource)}, "
                                       "only 'status' and 'eviction' are allowed")  # fmt: skip
        elif gr == ("", "nodes"):
            self._node(node, a)
        elif gr == ("", "persistentvolumeclaims"):
            if a.subresource != "status":
                raise new_forbidden(a, "may only update PVC status")
            self._pvc_status(node, a)
        elif gr == ("", "serviceaccounts"):
            await self._service_account(node, a)
        elif gr == ("coordination.k8s.io", "leases"):
            self._lease(node, a)
        elif gr == ("storage.k8s.io", "csinodes"):
            self._csi_node(node, a)

    # -- pods ------------------------------------------------------------------------------------------

    async def lookup(self, group_version: str, plural: str, namespace: str, name: str) -> Object | None:
        """An object as upstream's listers give it: from the watch cache, else from storage."""
        return await reads.get(self.host, group_version, plural, namespace, name)

    async def _existing_pod(self, a: Attributes, name: str) -> Object:
        pod = await self.lookup("v1", "pods", a.namespace, name)
        if pod is None:
            raise errors.not_found("pods", name)
        return pod

    async def _pod(self, node: str, a: Attributes) -> None:
        if a.operation == CREATE:
            await self._pod_create(node, a)
        elif a.operation == DELETE:
            pod = a.old_object or await self._existing_pod(a, a.name)
            if _spec(pod).get("nodeName") != node:
                raise new_forbidden(a, f"node {errors.go_quote(node)} can only delete pods with spec.nodeName set to itself")  # fmt: skip
        else:
            raise new_forbidden(a, f"unexpected operation {errors.go_quote(a.operation)}, node {errors.go_quote(node)} "
                                   "can only create and delete mirror pods")  # fmt: skip

    async def _pod_create(self, node: str, a: Attributes) -> None:
        pod = a.object or {}
        q = errors.go_quote(node)
        md, spec = _meta(pod), _spec(pod)
        if MIRROR_POD_ANNOTATION not in (md.get("annotations") or {}):
            raise new_forbidden(a, f"pod does not have {errors.go_quote(MIRROR_POD_ANNOTATION)} annotation, "
                                   f"node {q} can only create mirror pods")  # fmt: skip
        if spec.get("nodeName") != node:
            raise new_forbidden(a, f"node {q} can only create pods with spec.nodeName set to itself")
        owners = [o for o in md.get("ownerReferences") or [] if isinstance(o, dict)]
        if len(owners) > 1:
            raise new_forbidden(a, f"node {q} can only create pods with a single owner reference set to itself")
        if not owners:
            raise new_forbidden(a, f"node {q} can only create pods with an owner reference set to itself")
        owner = owners[0]
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise new_forbidden(a, f"node {q} can only create pods with an owner reference set to itself")
        if not owner.get("controller"):
            raise new_forbidden(a, f"node {q} can only create pods with a controller owner reference set to itself")
        if owner.get("blockOwnerDeletion"):
            raise new_forbidden(a, f"node {q} must not set blockOwnerDeletion on an owner reference")
        found = await self.lookup("v1", "nodes", "", node)
        if found is None:
            raise errors.not_found("nodes", node)
        uid = _meta(found).get("uid") or ""
        if owner.get("uid") != uid:
            raise new_forbidden(a, f"node {node} UID mismatch: expected {owner.get('uid') or ''} got {uid}")
        # A node may not make a pod that would let it read other objects (the Node authorizer's graph).
        if spec.get("serviceAccountName"):
            raise new_forbidden(a, f"node {q} can not create pods that reference a service account")
        if any(pod_secret_names(pod)):
            raise new_forbidden(a, f"node {q} can not create pods that reference secrets")
        if any(pod_configmap_names(pod)):
            raise new_forbidden(a, f"node {q} can not create pods that reference configmaps")
        volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
        for v in volumes:
            for source in (v.get("projected") or {}).get("sources") or []:
                if isinstance(source, dict) and source.get("clusterTrustBundle") is not None:
                    raise new_forbidden(a, f"node {q} can not create pods that reference clustertrustbundles")
        if any(v.get("persistentVolumeClaim") is not None for v in volumes):
            raise new_forbidden(a, f"node {q} can not create pods that reference persistentvolumeclaims")

    def _pod_status(self, node: str, a: Attributes) -> None:
        if a.operation != UPDATE:
            raise new_forbidden(a, f"unexpected operation {errors.go_quote(a.operation)}")
        q = errors.go_quote(node)
        if _spec(a.old_object).get("nodeName") != node:
            raise new_forbidden(a, f"node {q} can only update pod status for pods with spec.nodeName set to itself")
        if _labels(a.old_object) != _labels(a.object):
            raise new_forbidden(a, f"node {q} cannot update labels through pod status")
        old_claims = ((a.old_object or {}).get("status") or {}).get("resourceClaimStatuses") or []
        new_claims = ((a.object or {}).get("status") or {}).get("resourceClaimStatuses") or []
        if _claim_statuses(old_claims) != _claim_statuses(new_claims):
            raise new_forbidden(a, f"node {q} cannot update resource claim statues")

    async def _pod_eviction(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE:
            raise new_forbidden(a, f"unexpected operation {a.operation}")
        name = a.name or _meta(a.object).get("name") or ""
        if not name:
            raise new_forbidden(a, "could not determine pod from request data")
        pod = await self._existing_pod(a, name)
        if _spec(pod).get("nodeName") != node:
            raise new_forbidden(a, f"node {node} can only evict pods with spec.nodeName set to itself")

    # -- nodes -----------------------------------------------------------------------------------------

    def _node(self, node: str, a: Attributes) -> None:
        q = errors.go_quote(node)
        if a.name != node:
            raise new_forbidden(a, f"node {q} is not allowed to modify node {errors.go_quote(a.name)}")
        if a.operation == CREATE:
            if _spec(a.object).get("configSource") is not None:
                raise new_forbidden(a, f"node {q} is not allowed to create pods with a non-nil configSource")
            bad = forbidden_labels(modified_labels(_labels(a.object), {}))
            if bad:
                raise new_forbidden(a, f"node {q} is not allowed to set the following labels: {', '.join(bad)}")
        elif a.operation == UPDATE:
            new, old = _spec(a.object), _spec(a.old_object)
            if new.get("configSource") is not None and _semantic(new.get("configSource")) != _semantic(
                old.get("configSource")
            ):
                raise new_forbidden(a, f"node {q} is not allowed to update configSource to a new non-nil configSource")
            if _semantic(new.get("taints") or []) != _semantic(old.get("taints") or []):
                raise new_forbidden(a, f"node {q} is not allowed to modify taints")
            if _semantic(_meta(a.object).get("ownerReferences") or []) != _semantic(
                _meta(a.old_object).get("ownerReferences") or []
            ):
                raise new_forbidden(a, f"node {q} is not allowed to modify ownerReferences")
            bad = forbidden_labels(modified_labels(_labels(a.object), _labels(a.old_object)))
            if bad:
                # (upstream's wording here has no subject)
                raise new_forbidden(a, f"is not allowed to modify labels: {', '.join(bad)}")

    # -- persistent volume claims ----------------------------------------------------------------------

    def _pvc_status(self, node: str, a: Attributes) -> None:
        if a.operation != UPDATE:
            raise new_forbidden(a, f"unexpected operation {errors.go_quote(a.operation)}")

        def comparable(pvc: Object | None) -> Any:
            out = dict(pvc or {})
            md = dict(_meta(pvc))
            md.pop("resourceVersion", None)
            md.pop("managedFields", None)
            out["metadata"] = md
            status = dict((pvc or {}).get("status") or {})
            for f in PVC_STATUS_FIELDS:
                status.pop(f, None)
            out["status"] = status
            return _semantic(out)

        old, new = comparable(a.old_object), comparable(a.object)
        if old != new:
            diff = "\n".join(_diff(old, new))
            raise new_forbidden(a, f"node {errors.go_quote(node)} is not allowed to update fields other than "
                                   f"status.capacity and status.conditions: {diff}")  # fmt: skip

    # -- service-account tokens, leases, CSINodes ------------------------------------------------------

    async def _service_account(self, node: str, a: Attributes) -> None:
        if a.operation != CREATE or a.subresource != "token":
            return
        ref = _spec(a.object).get("boundObjectRef")
        if (
            not isinstance(ref, dict)
            or ref.get("apiVersion") != "v1"
            or ref.get("kind") != "Pod"
            or not ref.get("name")
        ):
            raise new_forbidden(a, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise new_forbidden(a, "node requested token with a pod binding without a uid")
        pod = await self._existing_pod(a, str(ref["name"]))
        if ref["uid"] != _meta(pod).get("uid"):
            raise new_forbidden(a, f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                                   "record. The object might have been deleted and then recreated")  # fmt: skip
        if _spec(pod).get("nodeName") != node:
            raise new_forbidden(a, "node requested token bound to a pod scheduled on a different node")

    @staticmethod
    def _lease(node: str, a: Attributes) -> None:
        if a.namespace != NODE_LEASE_NAMESPACE:
            raise new_forbidden(a, f"can only access leases in the {errors.go_quote(NODE_LEASE_NAMESPACE)} system namespace")  # fmt: skip
        name = _meta(a.object).get("name") if a.operation == CREATE else a.name
        if name != node:
            raise new_forbidden(a, "can only access node lease with the same name as the requesting node")

    @staticmethod
    def _csi_node(node: str, a: Attributes) -> None:
        name = _meta(a.object).get("name") if a.operation == CREATE else a.name
        if name != node:
            raise new_forbidden(a, "can only access CSINode with the same name as the requesting node")


def _claim_statuses(statuses: Any) -> list[tuple[Any, Any]]:
    """A pod's resourceClaimStatuses as upstream compares them: each entry's name and claim name, in order."""
    return [(s.get("name"), s.get("resourceClaimName")) for s in statuses if isinstance(s, dict)]
