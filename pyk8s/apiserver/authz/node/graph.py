"""What each node may reach (upstream: plugin/pkg/auth/authorizer/node/graph.go, its populator, and the pod and
volume reference visitors of pkg/api/v1/pod and pkg/api/v1/persistentvolume).

A pod bound to a node gives that node its secrets, configmaps, persistent volume claims, service account and
resource claims; a persistent volume bound to a reachable claim is reachable, and so are the secrets the kubelet
needs to mount it; a volume attachment names its node. Upstream keeps these as a graph walked from the object to
the node; here each reference keeps a count of the nodes its pods are on, so a question is a dictionary look-up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ....api.meta import Object

SECRET, CONFIGMAP, PVC, SERVICE_ACCOUNT, RESOURCE_CLAIM = (
    "secret",
    "configmap",
    "pvc",
    "serviceaccount",
    "resourceclaim",
)
POD, PV, VOLUME_ATTACHMENT = "pod", "pv", "volumeattachment"

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

Ref = tuple[str, str, str]  # (vertex type, namespace, name)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _name(ref: Any, key: str = "name") -> str:
    return str(ref.get(key) or "") if isinstance(ref, dict) else ""


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from _dicts(spec.get(key))


def pod_secret_names(pod: Object) -> Iterator[str]:
    """Every secret a pod names (upstream: VisitPodSecretNames over all containers), empty names skipped."""
    spec = pod.get("spec") or {}
    for ref in _dicts(spec.get("imagePullSecrets")):
        yield _name(ref)
    for c in _containers(spec):
        for env_from in _dicts(c.get("envFrom")):
            yield _name(env_from.get("secretRef"))
        for env in _dicts(c.get("env")):
            yield _name((env.get("valueFrom") or {}).get("secretKeyRef"))
    for v in _dicts(spec.get("volumes")):
        yield _name(v.get("azureFile"), "secretName")
        for source in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"):
            yield _name((v.get(source) or {}).get("secretRef"))
        yield _name(v.get("secret"), "secretName")
        yield _name((v.get("csi") or {}).get("nodePublishSecretRef"))
        for projected in _dicts((v.get("projected") or {}).get("sources")):
            yield _name(projected.get("secret"))


def pod_configmap_names(pod: Object) -> Iterator[str]:
    """Every configmap a pod names (upstream: VisitPodConfigmapNames over all containers)."""
    spec = pod.get("spec") or {}
    for c in _containers(spec):
        for env_from in _dicts(c.get("envFrom")):
            yield _name(env_from.get("configMapRef"))
        for env in _dicts(c.get("env")):
            yield _name((env.get("valueFrom") or {}).get("configMapKeyRef"))
    for v in _dicts(spec.get("volumes")):
        for projected in _dicts((v.get("projected") or {}).get("sources")):
            yield _name(projected.get("configMap"))
        yield _name(v.get("configMap"))


def pod_claim_names(pod: Object) -> Iterator[str]:
    """The persistent volume claims a pod uses, its generic ephemeral volumes' claims included."""
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    for v in _dicts(spec.get("volumes")):
        if isinstance(v.get("persistentVolumeClaim"), dict):
            yield _name(v["persistentVolumeClaim"], "claimName")
        elif isinstance(v.get("ephemeral"), dict):
            yield f"{md.get('name') or ''}-{v.get('name') or ''}"  # upstream: ephemeral.VolumeClaimName


def pod_resource_claim_names(pod: Object) -> Iterator[str]:
    """The ResourceClaims a pod has, by name or, for a template, as its status records (upstream:
    resourceclaim.Name); a claim not made yet has no name."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    made = {s.get("name"): s.get("resourceClaimName") for s in _dicts(status.get("resourceClaimStatuses"))}
    for claim in _dicts(spec.get("resourceClaims")):
        if claim.get("resourceClaimName"):
            yield str(claim["resourceClaimName"])
        elif claim.get("resourceClaimTemplateName") and made.get(claim.get("name")):
            yield str(made[claim.get("name")])


def pod_references(pod: Object) -> tuple[Ref, ...]:
    """What a bound pod gives its node (upstream: Graph.AddPod): nothing for a mirror pod, which a node made
    itself and which must not widen what it may read."""
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if MIRROR_POD_ANNOTATION in (md.get("annotations") or {}):
        return ()
    ns = str(md.get("namespace") or "")
    refs: set[Ref] = set()
    if spec.get("serviceAccountName"):
        refs.add((SERVICE_ACCOUNT, ns, str(spec["serviceAccountName"])))
    for kind, names in (
        (SECRET, pod_secret_names(pod)),
        (CONFIGMAP, pod_configmap_names(pod)),
        (PVC, pod_claim_names(pod)),
        (RESOURCE_CLAIM, pod_resource_claim_names(pod)),
    ):
        refs.update((kind, ns, n) for n in names if n)
    return tuple(refs)


def pv_secret_refs(pv: Object) -> Iterator[tuple[str, str]]:
    """The (namespace, name) of each secret the kubelet reads to mount a persistent volume (upstream:
    VisitPVSecretNames, kubelet-visible ones only); a reference without a namespace means the claim's."""
    spec = pv.get("spec") or {}
    claim_ns = str((spec.get("claimRef") or {}).get("namespace") or "")
    azure = spec.get("azureFile")
    if isinstance(azure, dict):
        yield str(azure.get("secretNamespace") or claim_ns), _name(azure, "secretName")
        return
    for source in ("cephfs", "flexVolume", "rbd", "scaleIO", "iscsi"):
        ref = (spec.get(source) or {}).get("secretRef") if isinstance(spec.get(source), dict) else None
        if isinstance(ref, dict):
            yield str(ref.get("namespace") or claim_ns), _name(ref)
            return
    for source in ("cinder", "storageos"):  # these two name the namespace as it is, empty or not
        ref = (spec.get(source) or {}).get("secretRef") if isinstance(spec.get(source), dict) else None
        if isinstance(ref, dict):
            yield str(ref.get("namespace") or ""), _name(ref)
            return
    csi = spec.get("csi")
    if isinstance(csi, dict):
        for key in ("nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef"):
            ref = csi.get(key)
            if isinstance(ref, dict):
                yield str(ref.get("namespace") or ""), _name(ref)


@dataclass(frozen=True, slots=True)
class _Pod:
    node: str
    uid: str
    claim_statuses: Any
    refs: tuple[Ref, ...]


@dataclass(frozen=True, slots=True)
class _PV:
    claim: tuple[str, str] | None
    secrets: tuple[tuple[str, str], ...]


class Graph:
    """The relationships between nodes and the objects their pods use, kept from the watch caches."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], _Pod] = {}
        self.refs: dict[Ref, Counter[str]] = {}  # an object -> the nodes of the pods that use it, counted
        self.pvs: dict[str, _PV] = {}
        self.secret_pvs: dict[tuple[str, str], set[str]] = {}  # a secret -> the PVs that need it mounted
        self.attachments: dict[str, str] = {}  # a VolumeAttachment -> its node

    # -- keeping it ------------------------------------------------------------------------------------

    def put_pod(self, pod: Object) -> None:
        md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        key = (str(md.get("namespace") or ""), str(md.get("name") or ""))
        node = str(spec.get("nodeName") or "")
        if not node:
            return  # upstream ignores a pod until it is bound; a binding is never undone
        claims = (pod.get("status") or {}).get("resourceClaimStatuses")
        old = self.pods.get(key)
        if old is not None and old.node == node and old.uid == md.get("uid") and old.claim_statuses == claims:
            return  # what a pod names is immutable: only a status write, which changes nothing here
        self.delete_pod(*key)
        entry = _Pod(node, str(md.get("uid") or ""), claims, pod_references(pod))
        self.pods[key] = entry
        for ref in entry.refs:
            self.refs.setdefault(ref, Counter())[node] += 1

    def delete_pod(self, namespace: str, name: str) -> None:
        entry = self.pods.pop((namespace, name), None)
        if entry is None:
            return
        for ref in entry.refs:
            nodes = self.refs.get(ref)
            if nodes is None:
                continue
            nodes[entry.node] -= 1
            if nodes[entry.node] <= 0:
                del nodes[entry.node]
            if not nodes:
                del self.refs[ref]

    def put_pv(self, pv: Object) -> None:
        name = str((pv.get("metadata") or {}).get("name") or "")
        self.delete_pv(name)
        claim_ref = (pv.get("spec") or {}).get("claimRef")
        if not isinstance(claim_ref, dict):
            return  # an unbound volume leads to no node
        claim = (str(claim_ref.get("namespace") or ""), str(claim_ref.get("name") or ""))
        secrets = tuple((ns, n) for ns, n in pv_secret_refs(pv) if n)
        self.pvs[name] = _PV(claim, secrets)
        for s in secrets:
            self.secret_pvs.setdefault(s, set()).add(name)

    def delete_pv(self, name: str) -> None:
        entry = self.pvs.pop(name, None)
        if entry is None:
            return
        for s in entry.secrets:
            pvs = self.secret_pvs.get(s)
            if pvs is not None:
                pvs.discard(name)
                if not pvs:
                    del self.secret_pvs[s]

    def put_volume_attachment(self, va: Object) -> None:
        name = str((va.get("metadata") or {}).get("name") or "")
        node = str((va.get("spec") or {}).get("nodeName") or "")
        if node:
            self.attachments[name] = node
        else:
            self.attachments.pop(name, None)

    def delete_volume_attachment(self, name: str) -> None:
        self.attachments.pop(name, None)

    def clear(self, kind: str) -> None:
        """Forget everything one resource told (its watch starts again from the current objects)."""
        if kind == POD:
            for key in list(self.pods):
                self.delete_pod(*key)
        elif kind == PV:
            self.pvs.clear()
            self.secret_pvs.clear()
        elif kind == VOLUME_ATTACHMENT:
            self.attachments.clear()

    # -- asking it -------------------------------------------------------------------------------------

    def _used_on(self, kind: str, namespace: str, name: str, node: str) -> bool:
        nodes = self.refs.get((kind, namespace, name))
        return nodes is not None and node in nodes

    def has_path(self, kind: str, namespace: str, name: str, node: str) -> bool:
        """Whether the object leads to `node` (upstream: NodeAuthorizer.hasPathFrom)."""
        if kind == POD:
            entry = self.pods.get((namespace, name))
            return entry is not None and entry.node == node
        if kind == VOLUME_ATTACHMENT:
            return self.attachments.get(name) == node
        if kind == PV:
            pv = self.pvs.get(name)
            return pv is not None and pv.claim is not None and self._used_on(PVC, *pv.claim, node)
        if self._used_on(kind, namespace, name, node):
            return True
        if kind == SECRET:
            return any(self.has_path(PV, "", pv, node) for pv in self.secret_pvs.get((namespace, name), ()))
        return False
