"""The volume binder behind the VolumeBinding plugin (upstream: plugins/volumebinding/binder.go).

- `get_pod_volume_claims` (PreFilter) sorts the pod's claims into bound, unbound with delayed binding
  (WaitForFirstConsumer) and unbound immediate ones, and lists the candidate PVs of the delayed claims' classes.
- `find_pod_volumes` (Filter, per node) checks bound PVs' node affinity, matches delayed claims to available PVs
  (smallest fitting first) and checks that the rest can be provisioned for that node.
- `assume_pod_volumes` (Reserve) records the chosen PV bindings and the selected-node annotations in the assume
  caches; `revert_assumed_pod_volumes` (Unreserve) undoes that.
- `bind_pod_volumes` (PreBind) writes them through the API and polls until the PV controller and provisioners
  finished binding, failing on timeout or when the binding was undone.

In-tree PVs are checked with their own node affinity: the CSI translation of their topology upstream applies
on nodes whose CSINode lists the plugin as migrated is not reproduced.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from ....api import errors as apierrors
from ....api.quantity import QuantityError, parse_quantity, value
from ....api.selectors import SelectorError, label_selector_from_object
from ..storage_helpers import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    ZERO,
    annotations_of,
    check_node_affinity,
    claim_class,
    claim_reference,
    find_matching_volume,
    is_pvc_fully_bound,
    is_volume_bound_to_claim,
    key_of,
    match_topology_selector_terms,
    meta,
    pod_claim_names,
    quantity_value,
    resource_version,
    spec,
    storage_capacity,
    storage_request,
    volume_is_for_pod,
)
from .assume_cache import AssumeError, PVAssumeCache, PVCAssumeCache

log = logging.getLogger(__name__)
Obj = dict[str, Any]

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

POLL_INTERVAL = 1.0  # seconds between checks while waiting for the PV controller (upstream: time.Second)


class BinderError(Exception):
    """An error (not a "does not fit" reason): the plugin turns it into an Error status."""


@dataclass
class BindingInfo:
    """A claim and the PV chosen for it."""

    pvc: Obj
    pv: Obj

    def storage_class_name(self) -> str:
        return spec(self.pv).get("storageClassName") or ""

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) in bytes."""
        return quantity_value(storage_request(self.pvc)), quantity_value(storage_capacity(self.pv))


@dataclass
class PodVolumes:
    """What Filter decided for one node: PVs to bind and claims to provision there."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[Obj] = field(default_factory=list)


@dataclass
class PodVolumeClaims:
    bound_claims: list[Obj] = field(default_factory=list)
    unbound_claims_delay_binding: list[Obj] = field(default_factory=list)
    unbound_claims_immediate: list[Obj] = field(default_factory=list)
    # storage class -> its PVs (assumed versions included), for the delayed claims to choose from
    unbound_volumes_delay_binding: dict[str, list[Obj]] = field(default_factory=dict)


class VolumeBinder:
    def __init__(self, handle: Any, bind_timeout: float) -> None:
        self.handle = handle
        self.objects = handle.objects
        self.pv_cache = PVAssumeCache(handle.objects)
        self.pvc_cache = PVCAssumeCache(handle.objects)
        self.bind_timeout = bind_timeout
        self.vac_enabled = bool(handle.feature_gates.get("VolumeAttributesClass", False))

    # -- PreFilter ------------------------------------------------------------------------------------------------

    def _is_volume_bound(self, pod: Obj, claim_name: str, ephemeral: bool) -> tuple[bool, Obj]:
        ns = meta(pod).get("namespace", "")
        key = f"{ns}/{claim_name}"
        pvc = self.pvc_cache.get(key)
        if pvc is None:
            raise BinderError(f'error getting PVC "{key}": could not find v1.PersistentVolumeClaim "{key}"')
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem is not None:
                raise BinderError(problem)
        return is_pvc_fully_bound(pvc), pvc

    def is_delay_binding_mode(self, pvc: Obj) -> bool:
        class_name = claim_class(pvc)
        if not class_name:
            return False
        sc = self.objects.get("storageclasses", "", class_name)
        if sc is None:
            return False
        mode = sc.get("volumeBindingMode")
        if mode is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return mode == WAIT_FOR_FIRST_CONSUMER

    def get_pod_volume_claims(self, pod: Obj) -> PodVolumeClaims:
        claims = PodVolumeClaims()
        for claim_name, ephemeral, _ in pod_claim_names(pod):
            bound, pvc = self._is_volume_bound(pod, claim_name, ephemeral)
            if bound:
                claims.bound_claims.append(pvc)
            elif self.is_delay_binding_mode(pvc) and not spec(pvc).get("volumeName"):
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                # Immediate claims (and claims pre-bound to a PV) are the PV controller's to bind.
                claims.unbound_claims_immediate.append(pvc)
        for pvc in claims.unbound_claims_delay_binding:
            cls = claim_class(pvc)
            claims.unbound_volumes_delay_binding[cls] = self.pv_cache.list_pvs(cls)
        return claims

    # -- Filter -----------------------------------------------------------------------------------------------

    def find_pod_volumes(self, pod: Obj, claims: PodVolumeClaims, node: Obj) -> tuple[PodVolumes, list[str]]:
        """The volumes to bind/provision on this node and the reasons it does not fit (empty when it does)."""
        volumes = PodVolumes()
        bound_ok, bound_pvs_found = True, True
        unbound_ok, sufficient_storage = True, True
        node_labels = meta(node).get("labels") or {}
        node_name = meta(node).get("name", "")
        if claims.bound_claims:
            bound_ok, bound_pvs_found = self._check_bound_claims(claims.bound_claims, node_labels)
        if claims.unbound_claims_delay_binding:
            to_provision: list[Obj] = []
            to_match: list[Obj] = []
            for pvc in claims.unbound_claims_delay_binding:
                selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node_name:
                        # Provisioning already started for another node.
                        return volumes, _reasons(bound_ok, False, sufficient_storage, bound_pvs_found)
                    to_provision.append(pvc)
                else:
                    to_match.append(pvc)
            if to_match:
                unbound_ok, volumes.static_bindings, unmatched = self._find_matching_volumes(
                    to_match, claims.unbound_volumes_delay_binding, node_labels
                )
                to_provision.extend(unmatched)
            if to_provision:
                unbound_ok, sufficient_storage, volumes.dynamic_provisions = self._check_volume_provisions(
                    to_provision, node
                )
        return volumes, _reasons(bound_ok, unbound_ok, sufficient_storage, bound_pvs_found)

    def _check_bound_claims(self, bound: list[Obj], node_labels: dict[str, str]) -> tuple[bool, bool]:
        """(node affinity satisfied, all PVs found)."""
        for pvc in bound:
            pv = self.pv_cache.get(spec(pvc).get("volumeName") or "")
            if pv is None:
                return True, False
            if not check_node_affinity(pv, node_labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self, claims: list[Obj], pvs_by_class: dict[str, list[Obj]], node_labels: dict[str, str]
    ) -> tuple[bool, list[BindingInfo], list[Obj]]:
        """Match each claim, smallest request first, to the smallest fitting PV not yet chosen."""
        ordered = sorted(claims, key=lambda c: storage_request(c) or ZERO)
        chosen: set[str] = set()
        bindings: list[BindingInfo] = []
        unmatched: list[Obj] = []
        found_all = True
        for pvc in ordered:
            try:
                pv = find_matching_volume(
                    pvc, pvs_by_class.get(claim_class(pvc), []), node_labels, chosen, vac_enabled=self.vac_enabled
                )
            except SelectorError:
                raise BinderError(f"error creating internal label selector for claim: {key_of(pvc)}") from None
            if pv is None:
                unmatched.append(pvc)
                found_all = False
                continue
            chosen.add(meta(pv).get("name", ""))
            bindings.append(BindingInfo(pvc, pv))
        return found_all, bindings, unmatched

    def _check_volume_provisions(self, claims: list[Obj], node: Obj) -> tuple[bool, bool, list[Obj]]:
        """(provisioning possible, enough capacity, claims to provision) for claims without a matching PV."""
        node_labels = meta(node).get("labels") or {}
        provisions: list[Obj] = []
        for pvc in claims:
            class_name = claim_class(pvc)
            if not class_name:
                raise BinderError(f'no class for claim "{key_of(pvc)}"')
            sc = self.objects.get("storageclasses", "", class_name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = sc.get("provisioner") or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.get("allowedTopologies"), node_labels):
                return False, True, []
            if not self._has_enough_capacity(provisioner, pvc, sc, node_labels):
                return True, False, []
            provisions.append(pvc)
        return True, True, provisions

    def _has_enough_capacity(self, provisioner: str, pvc: Obj, sc: Obj, node_labels: dict[str, str]) -> bool:
        """Storage capacity tracking, for CSI drivers that opt in with spec.storageCapacity."""
        requested = storage_request(pvc)
        if requested is None:
            return True
        driver = self.objects.get("csidrivers", "", provisioner)
        if driver is None or not spec(driver).get("storageCapacity"):
            return True
        size = value(requested)
        sc_name = meta(sc).get("name", "")
        for cap in self.objects.list("csistoragecapacities"):
            if cap.get("storageClassName") != sc_name:
                continue
            # maximumVolumeSize, when given, is the more precise limit.
            limit = cap.get("maximumVolumeSize") if cap.get("maximumVolumeSize") is not None else cap.get("capacity")
            try:
                if limit is None or value(parse_quantity(str(limit))) < size:
                    continue
            except QuantityError:
                continue
            topology = cap.get("nodeTopology")
            if topology is None:
                continue
            try:
                if label_selector_from_object(topology).matches(node_labels):
                    return True
            except SelectorError:
                continue
        return False

    # -- Reserve / Unreserve ----------------------------------------------------------------------------------

    def are_pod_volumes_bound(self, pod: Obj) -> bool:
        for claim_name, ephemeral, _ in pod_claim_names(pod):
            try:
                bound, _ = self._is_volume_bound(pod, claim_name, ephemeral)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, pod: Obj, node_name: str, volumes: PodVolumes) -> bool:
        """Assume the node's bindings and provisions; True when every claim is already fully bound."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for b in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except AssumeError as e:
                    self._revert_pvs(new_bindings)
                    raise BinderError(str(e)) from None
            new_bindings.append(BindingInfo(b.pvc, new_pv))
        new_claims: list[Obj] = []
        for pvc in volumes.dynamic_provisions:
            clone = copy.deepcopy(pvc)  # the lister's object is shared: never modify it
            clone.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
            try:
                self.pvc_cache.assume(clone)
            except AssumeError as e:
                self._revert_pvs(new_bindings)
                self._revert_pvcs(new_claims)
                raise BinderError(str(e)) from None
            new_claims.append(clone)
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_claims
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs(volumes.dynamic_provisions)

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(meta(b.pv).get("name", ""))

    def _revert_pvcs(self, claims: list[Obj]) -> None:
        for pvc in claims:
            self.pvc_cache.restore(key_of(pvc))

    # -- PreBind ----------------------------------------------------------------------------------------------

    async def bind_pod_volumes(self, pod: Obj, node_name: str, volumes: PodVolumes) -> None:
        """Write the assumed bindings and wait (polling the API) until the claims are fully bound."""
        client = self.handle.client
        if client is None:
            return  # evaluating offline: there is no API to write to
        await self._bind_api_update(client, pod, volumes)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.bind_timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise BinderError("binding volumes: context deadline exceeded")
            await asyncio.sleep(min(POLL_INTERVAL, remaining))
            try:
                done = await self._check_bindings(client, pod, node_name, volumes)
            except BinderError as e:
                raise BinderError(f"binding volumes: {e}") from None
            if done:
                log.debug("all PVCs for pod %s are bound", key_of(pod))
                return

    async def _bind_api_update(self, client: Any, pod: Obj, volumes: PodVolumes) -> None:
        bindings, claims = volumes.static_bindings, volumes.dynamic_provisions
        done_bindings = done_claims = 0
        try:
            # Pre-bind each PV to its claim; the PV controller completes the binding (no API rollback).
            for b in bindings:
                b.pv = await client.update("persistentvolumes", b.pv)
                done_bindings += 1
            # The selected-node annotation asks the provisioner to create a volume for that node.
            for i, pvc in enumerate(claims):
                claims[i] = await client.update("persistentvolumeclaims", pvc, meta(pvc).get("namespace"))
                done_claims += 1
        except apierrors.StatusError as e:
            raise BinderError(e.message) from None
        finally:
            # Only what was not written goes back to the lister's version.
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs(claims[done_claims:])

    async def _get(self, client: Any, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return await client.get(resource, name, namespace)
        except apierrors.NotFound:
            return None

    async def _check_bindings(self, client: Any, pod: Obj, node_name: str, volumes: PodVolumes) -> bool:
        """True when every claim the pod needed bound is fully bound; BinderError when binding must be retried
        (it was undone, the PV no longer fits the node, provisioning failed, the pod is gone)."""
        try:
            node = await client.get("nodes", node_name)
        except apierrors.StatusError as e:
            raise BinderError(f'failed to get node "{node_name}": {e.message}') from None
        node_labels = meta(node).get("labels") or {}
        pod_md = meta(pod)
        try:
            await client.get("pods", pod_md.get("name", ""), pod_md.get("namespace", ""))
        except apierrors.NotFound as e:
            raise BinderError(f"pod does not exist any more: {e.message}") from None
        except apierrors.StatusError as e:
            log.error("failed to get pod %s: %s", key_of(pod), e.message)
        for b in volumes.static_bindings:
            pv_name = meta(b.pv).get("name", "")
            try:
                pv = await client.get("persistentvolumes", pv_name)
                pvc = await client.get(
                    "persistentvolumeclaims", meta(b.pvc).get("name", ""), meta(b.pvc).get("namespace")
                )
            except apierrors.StatusError as e:
                raise BinderError(f"failed to check binding: {e.message}") from None
            if resource_version(b.pv) > resource_version(pv):
                return False  # our own write has not come back yet
            if not check_node_affinity(pv, node_labels):
                raise BinderError(
                    f'pv "{pv_name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
                )
            ref = spec(pv).get("claimRef")
            if ref is None or not ref.get("uid"):
                raise BinderError(f'ClaimRef got reset for pv "{pv_name}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in volumes.dynamic_provisions:
            name = meta(claim).get("name", "")
            try:
                pvc = await client.get("persistentvolumeclaims", name, meta(claim).get("namespace"))
            except apierrors.StatusError as e:
                raise BinderError(f"failed to check provisioning pvc: {e.message}") from None
            if resource_version(claim) > resource_version(pvc):
                return False
            ann = meta(pvc).get("annotations")
            if ann is None:
                raise BinderError(f'selectedNode annotation reset for PVC "{name}"')
            if ann.get(ANN_SELECTED_NODE, "") != node_name:
                # The provisioner removes the annotation when it fails, asking for another node.
                raise BinderError(f'provisioning failed for PVC "{name}"')
            volume_name = spec(pvc).get("volumeName")
            if volume_name:
                pv = await self._get(client, "persistentvolumes", volume_name)
                if pv is None:
                    return False  # not visible yet, or deleted (the claim will become unbound)
                if not check_node_affinity(pv, node_labels):
                    raise BinderError(
                        f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_pvc_fully_bound(pvc):
                return False
        return True


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> tuple[Obj, bool]:
    """A copy of the PV bound to the claim, and whether anything changed (upstream: GetBindVolumeToClaim)."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone = copy.deepcopy(pv)
    dirty = False
    ref = spec(pv).get("claimRef")
    md = meta(pvc)
    if (
        ref is None
        or ref.get("name") != md.get("name")
        or (ref.get("namespace") or "") != (md.get("namespace") or "")
        or (ref.get("uid") or "") != (md.get("uid") or "")
    ):
        clone.setdefault("spec", {})["claimRef"] = claim_reference(pvc)
        dirty = True
    ann = clone.setdefault("metadata", {}).get("annotations") or {}
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in ann:
        clone["metadata"]["annotations"] = {**ann, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return clone, dirty


def _reasons(bound_ok: bool, unbound_ok: bool, sufficient_storage: bool, bound_pvs_found: bool) -> list[str]:
    out = []
    if not bound_ok:
        out.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        out.append(ERR_REASON_BIND_CONFLICT)
    if not sufficient_storage:
        out.append(ERR_REASON_NOT_ENOUGH_SPACE)
    if not bound_pvs_found:
        out.append(ERR_REASON_PV_NOT_EXIST)
    return out


__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "BinderError",
    "BindingInfo",
    "PodVolumeClaims",
    "PodVolumes",
    "VolumeBinder",
    "bind_volume_to_claim",
]
