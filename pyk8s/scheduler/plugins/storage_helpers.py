"""Storage rules the volume plugins share (upstream: component-helpers/storage/volume's helpers.go and
pv_helpers.go, component-helpers/storage/ephemeral, and the lister "not found" errors): a claim's storage class,
generic ephemeral claims, a PV's node affinity, a storage class's allowed topologies, PV/PVC binding state.
"""

from __future__ import annotations

from typing import Any

from ...api.quantity import Quantity, parse_quantity, value
from ...api.selectors import SelectorError, label_selector_from_object
from ..framework.interface import Pod
from .helper import node_selector_matches

Obj = dict[str, Any]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

# What the informer listers name each resource in their NotFound errors (client-go's generated listers use
# the singular resource, qualified by group outside the core group).
LISTER_RESOURCE = {
    "persistentvolumeclaims": "persistentvolumeclaim",
    "persistentvolumes": "persistentvolume",
    "storageclasses": "storageclass.storage.k8s.io",
    "csinodes": "csinode.storage.k8s.io",
    "csidrivers": "csidriver.storage.k8s.io",
}


class NotFoundError(LookupError):
    """A lister miss, worded as upstream's apierrors.NewNotFound ('persistentvolumeclaim "x" not found')."""

    def __init__(self, resource: str, name: str) -> None:
        self.resource = resource
        self.name = name
        super().__init__(f'{LISTER_RESOURCE.get(resource, resource)} "{name}" not found')


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def annotations_of(obj: Obj) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def key_of(obj: Obj) -> str:
    md = meta(obj)
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def claim_class(pvc: Obj) -> str:
    """The claim's storage class: the beta annotation wins over spec.storageClassName; "" when none
    (upstream: GetPersistentVolumeClaimClass)."""
    ann = annotations_of(pvc)
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    cls = spec(pvc).get("storageClassName")
    return cls if cls is not None else ""


def volume_class(pv: Obj) -> str:
    """The PV's storage class, beta annotation first (upstream: GetPersistentVolumeClass)."""
    ann = annotations_of(pv)
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return spec(pv).get("storageClassName") or ""


def ephemeral_claim_name(pod: Pod, volume: Obj) -> str:
    """The PVC a generic ephemeral volume uses: "<pod>-<volume>" (upstream: ephemeral.VolumeClaimName)."""
    return f"{meta(pod).get('name', '')}-{volume.get('name', '')}"


def volume_is_for_pod(pod: Pod, pvc: Obj) -> str | None:
    """None when the pod controls the PVC (its ephemeral claim), else upstream's error text."""
    pod_md, pvc_md = meta(pod), meta(pvc)
    owned = pod_md.get("namespace", "") == pvc_md.get("namespace", "") and any(
        ref.get("controller") and ref.get("uid") == pod_md.get("uid") for ref in pvc_md.get("ownerReferences") or ()
    )
    if owned:
        return None
    return (
        f"PVC {pvc_md.get('namespace', '')}/{pvc_md.get('name', '')} was not created for pod "
        f"{pod_md.get('namespace', '')}/{pod_md.get('name', '')} (pod is not owner)"
    )


def pod_claim_names(pod: Pod) -> list[tuple[str, bool, Obj]]:
    """(claim name, is ephemeral, volume) for every volume of the pod backed by a PVC."""
    out = []
    for vol in spec(pod).get("volumes") or ():
        pvc_src = vol.get("persistentVolumeClaim")
        if pvc_src is not None:
            out.append((pvc_src.get("claimName") or "", False, vol))
        elif vol.get("ephemeral") is not None:
            out.append((ephemeral_claim_name(pod, vol), True, vol))
    return out


def has_pvc_volumes(pod: Pod) -> bool:
    """Whether any volume is a PVC or a generic ephemeral volume (the cheap test PreFilters skip on)."""
    for vol in spec(pod).get("volumes") or ():
        if vol.get("persistentVolumeClaim") is not None or vol.get("ephemeral") is not None:
            return True
    return False


def resource_version(obj: Obj | None) -> int:
    """metadata.resourceVersion as an int; objects without one (tests, offline scenarios) count as 0."""
    if obj is None:
        return 0
    try:
        return int(meta(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _quantity(text: Any) -> Quantity | None:
    if text is None:
        return None
    try:
        return parse_quantity(str(text))
    except ValueError:
        return None


ZERO = parse_quantity("0")


def storage_request(pvc: Obj) -> Quantity | None:
    """spec.resources.requests.storage, None when absent."""
    return _quantity(((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage"))


def storage_capacity(pv: Obj) -> Quantity:
    """spec.capacity.storage (zero when absent, as a missing map entry in Go)."""
    return _quantity((spec(pv).get("capacity") or {}).get("storage")) or ZERO


def quantity_value(q: Quantity | None) -> int:
    return value(q) if q is not None else 0


def check_node_affinity(pv: Obj, node_labels: dict[str, str]) -> bool:
    """Whether the PV's required node affinity admits a node with these labels (upstream: CheckNodeAffinity,
    which matches against a node that has labels only, so matchFields on metadata.name never match a name)."""
    affinity = spec(pv).get("nodeAffinity")
    if not affinity:
        return True
    required = affinity.get("required")
    if required is None:
        return True
    return node_selector_matches(required, {"metadata": {"name": "", "labels": node_labels}})


def match_topology_selector_terms(terms: list[Obj] | None, labels: dict[str, str]) -> bool:
    """A StorageClass's allowedTopologies against node labels: no terms match everything, a term with no
    expressions matches nothing, and each expression needs the label with one of its values
    (upstream: v1helper.MatchTopologySelectorTerms)."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if not exprs:
            continue
        ok = True
        for expr in exprs:
            values = expr.get("values") or []
            have = labels.get(expr.get("key", ""))
            # An empty value list is an invalid requirement upstream, which makes the whole term fail.
            if not values or have is None or have not in values:
                ok = False
                break
        if ok:
            return True
    return False


def claim_selector_matches(pvc: Obj, labels: dict[str, str] | None) -> bool | None:
    """The claim's spec.selector against a PV's labels; None when the selector is invalid."""
    sel = spec(pvc).get("selector")
    if sel is None:
        return True
    try:
        return label_selector_from_object(sel).matches(labels)
    except SelectorError:
        return None


def access_modes(obj: Obj) -> list[str]:
    return spec(obj).get("accessModes") or []


def is_pvc_fully_bound(pvc: Obj) -> bool:
    """spec.volumeName set and the bind-completed annotation present (upstream: isPVCFullyBound)."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def is_volume_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    """The PV's claimRef names this claim (and its UID, when the ref has one)."""
    ref = spec(pv).get("claimRef")
    if ref is None:
        return False
    md = meta(pvc)
    if ref.get("name") != md.get("name") or (ref.get("namespace") or "") != (md.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == md.get("uid")


def claim_reference(pvc: Obj) -> Obj:
    """An ObjectReference to the claim, as reference.GetReference builds it."""
    md = meta(pvc)
    ref: Obj = {"kind": "PersistentVolumeClaim", "namespace": md.get("namespace", ""), "name": md.get("name", "")}
    if md.get("uid"):
        ref["uid"] = md["uid"]
    ref["apiVersion"] = "v1"
    if md.get("resourceVersion"):
        ref["resourceVersion"] = md["resourceVersion"]
    return ref


def migrated_plugins(csi_node: Obj | None) -> set[str]:
    """The in-tree plugins a CSINode's annotation says were migrated to CSI on that node."""
    if csi_node is None:
        return set()
    text = annotations_of(csi_node).get(ANN_MIGRATED_PLUGINS) or ""
    return set(text.split(",")) if text else set()


def pod_uses_claim(pod: Pod, pvc: Obj | None) -> bool:
    """Whether `pvc` is one of the pod's claims (named directly or as its generic ephemeral volume's claim)."""
    if pvc is None or meta(pvc).get("namespace") != meta(pod).get("namespace"):
        return False
    name = meta(pvc).get("name")
    return any(claim == name for claim, _, _ in pod_claim_names(pod))


def find_matching_volume(
    pvc: Obj,
    pvs: list[Obj],
    node_labels: dict[str, str] | None,
    excluded: set[str],
    *,
    delay_binding: bool = False,
    vac_enabled: bool = False,
) -> Obj | None:
    """The PV pre-bound to the claim, else the smallest Available one that satisfies it (upstream:
    FindMatchingVolume, shared by the scheduler and the PV controller). The scheduler passes the node's labels;
    the PV controller passes None, and leaves claims of WaitForFirstConsumer classes (`delay_binding`) to the
    scheduler unless a PV is pre-bound to them. Raises SelectorError for a claim selector that does not parse."""
    requested = storage_request(pvc) or ZERO
    requested_class = claim_class(pvc)
    claim_mode = spec(pvc).get("volumeMode") or "Filesystem"
    if spec(pvc).get("selector") is not None:
        label_selector_from_object(spec(pvc)["selector"])
    smallest: Obj | None = None
    smallest_qty = None
    for pv in pvs:
        pv_md, pv_spec = meta(pv), spec(pv)
        if pv_md.get("name", "") in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv_spec.get("claimRef") is not None and not bound_to_claim:
            continue
        qty = storage_capacity(pv)
        if qty < requested:
            continue
        if (pv_spec.get("volumeMode") or "Filesystem") != claim_mode:
            continue
        if pv_md.get("deletionTimestamp"):
            continue
        affinity_ok = node_labels is None or check_node_affinity(pv, node_labels)
        if bound_to_claim:
            # A PV pre-bound to the claim is the only candidate: it fits this node or nothing does.
            return pv if affinity_ok else None
        if node_labels is None and delay_binding:
            continue
        if (pv.get("status") or {}).get("phase") != "Available":
            continue
        if not claim_selector_matches(pvc, pv_md.get("labels")):
            continue
        if volume_class(pv) != requested_class:
            continue
        if vac_enabled and (spec(pvc).get("volumeAttributesClassName") or "") != (
            pv_spec.get("volumeAttributesClassName") or ""
        ):
            continue
        if not affinity_ok:
            continue
        modes = set(access_modes(pv))
        if any(m not in modes for m in access_modes(pvc)):
            continue
        if smallest_qty is None or qty < smallest_qty:
            smallest, smallest_qty = pv, qty
    return smallest
