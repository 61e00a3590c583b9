"""Which objects a controller owns (upstream: pkg/controller/controller_ref_manager.go: PodControllerRefManager,
ReplicaSetControllerRefManager, ControllerRevisionControllerRefManager).

Ownership is the object's controller owner reference, not the selector: a controller claims the objects (pods, or
a Deployment's ReplicaSets) it owns that its selector still matches, releases the ones it owns that no longer match
(a PATCH deleting its reference), and adopts orphans that match (a PATCH adding its reference). Both patches carry
the object's UID, so one deleted and re-created under the same name in between is left alone (409 Conflict). An owner being deleted
adopts and releases nothing; before the first adoption the owner is read fresh from the API server, so that an
owner deleted since the cache saw it does not take orphans with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ..api import errors
from ..api.meta import controller_of
from ..api.selectors import LabelSelector
from ..client.cache.indexer import Indexer
from .podutil import is_pod_ready

Pod = Mapping[str, Any]
Patch = Callable[[str, str, dict[str, Any]], Awaitable[Any]]  # (namespace, name, strategic merge patch)


class CannotAdopt(Exception):
    """The owner may not adopt: it is gone, replaced, or being deleted."""


def adopt_patch(owner_ref: Mapping[str, Any], pod_uid: str, finalizers: Iterable[str] = ()) -> dict[str, Any]:
    """The strategic merge patch that makes `owner_ref` the pod's controller (upstream:
    ownerRefControllerPatch); a Job's also adds its tracking finalizer."""
    meta: dict[str, Any] = {"ownerReferences": [dict(owner_ref)], "uid": pod_uid}
    if fin := list(finalizers):
        meta["finalizers"] = fin
    return {"metadata": meta}


def release_patch(owner_uid: str, pod_uid: str) -> dict[str, Any]:
    """The strategic merge patch that removes the owner's reference from the pod (upstream:
    GenerateDeleteOwnerRefStrategicMergeBytes)."""
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": pod_uid}}


class ControllerRefManager:
    """Claims objects of one kind for one owner: `claim` answers those it owns after adopting and releasing;
    `patch` writes the adoption and release patches to that kind."""

    def __init__(
        self,
        patch: Patch,
        owner: Mapping[str, Any],
        owner_ref: Mapping[str, Any],
        selector: LabelSelector,
        can_adopt: Callable[[], Awaitable[None]],
        finalizers: Iterable[str] = (),
    ) -> None:
        self.patch = patch
        self.owner = owner
        self.owner_ref = owner_ref
        self.selector = selector
        self._can_adopt = can_adopt
        self._can_adopt_checked: BaseException | bool | None = False
        self.finalizers = tuple(finalizers)
        md = owner.get("metadata") or {}
        self.uid = str(md.get("uid") or "")
        self.namespace = str(md.get("namespace") or "")
        self.deleting = bool(md.get("deletionTimestamp"))

    async def claim(self, objs: Iterable[Pod], extra_match: Callable[[Pod], bool] | None = None) -> list[Pod]:
        """The objects this owner controls once orphans are adopted and strays released; raises the first error
        (after trying every object), as upstream aggregates them."""
        claimed: list[Pod] = []
        failures: list[BaseException] = []
        uid = self.uid
        for obj in objs:
            # The common cases decided here without a coroutine per object: another controller's, or ours and
            # still matching. Orphans to adopt and strays to release go the long way.
            ref = controller_of(obj)
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if self._matches(obj, extra_match):
                    claimed.append(obj)
                    continue
            try:
                if await self._claim(obj, extra_match):
                    claimed.append(obj)
            except (errors.StatusError, ConnectionError, CannotAdopt) as err:
                failures.append(err)
        if failures:
            raise failures[0]
        return claimed

    def _matches(self, pod: Pod, extra_match: Callable[[Pod], bool] | None) -> bool:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return self.selector.matches(labels) and (extra_match is None or extra_match(pod))

    async def _claim(self, pod: Pod, extra_match: Callable[[Pod], bool] | None) -> bool:
        md = pod.get("metadata") or {}
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("uid") != self.uid:
                return False  # another controller's
            if self._matches(pod, extra_match):
                return True
            if self.deleting:
                return False
            try:
                await self.patch(str(md.get("namespace")), str(md.get("name")),
                                 release_patch(self.uid, str(md.get("uid") or "")))  # fmt: skip
            except errors.NotFound:
                pass  # gone already: nothing to release
            return False
        # An orphan.
        if self.deleting or not self._matches(pod, extra_match) or md.get("deletionTimestamp"):
            return False
        if self.namespace and md.get("namespace") != self.namespace:
            return False
        await self._check_can_adopt()
        try:
            await self.patch(
                str(md.get("namespace")), str(md.get("name")),
                adopt_patch(self.owner_ref, str(md.get("uid") or ""), self.finalizers),
            )  # fmt: skip
        except errors.NotFound:
            return False
        return True

    async def _check_can_adopt(self) -> None:
        """Upstream's canAdopt: one fresh check per claim, its failure remembered."""
        if self._can_adopt_checked is False:
            try:
                await self._can_adopt()
                self._can_adopt_checked = None
            except (errors.StatusError, ConnectionError, CannotAdopt) as err:
                self._can_adopt_checked = err
        if isinstance(self._can_adopt_checked, BaseException):
            raise self._can_adopt_checked


def recheck_deletion(get_fresh: Callable[[], Awaitable[Mapping[str, Any]]], kind: str,
                     owner: Mapping[str, Any]) -> Callable[[], Awaitable[None]]:  # fmt: skip
    """A `can_adopt` that reads the owner afresh and refuses if it is gone, replaced (another UID) or being
    deleted (upstream: RecheckDeletionTimestamp with the controller's own GET)."""
    md = owner.get("metadata") or {}

    async def check() -> None:
        fresh = await get_fresh()
        fmd = fresh.get("metadata") or {}
        if fmd.get("uid") != md.get("uid"):
            raise CannotAdopt(f"original {kind} {md.get('namespace')}/{md.get('name')} is gone: got uid "
                              f"{fmd.get('uid')}, wanted {md.get('uid')}")  # fmt: skip
        if fmd.get("deletionTimestamp"):
            raise CannotAdopt(f"{md.get('namespace')}/{md.get('name')} has just been deleted at "
                              f"{fmd.get('deletionTimestamp')}")  # fmt: skip

    return check


# Pods by their controller's UID, orphans under `<namespace>/_ORPHAN_POD` (upstream: PodControllerUIDIndex), so that
# an owner's sync looks at its own pods and the orphans of its namespace instead of every pod there.
POD_CONTROLLER_UID_INDEX = "podControllerUID"
ORPHAN_POD_INDEX_KEY = "_ORPHAN_POD"


def _controller_uid_index(pod: Pod) -> list[str]:
    ref = controller_of(pod)
    if ref is not None:
        return [str(ref.get("uid") or "")]
    return [f"{(pod.get('metadata') or {}).get('namespace', '')}/{ORPHAN_POD_INDEX_KEY}"]


def add_pod_controller_uid_indexer(indexer: Indexer) -> None:
    """File the pods under their controller's UID (once per shared informer, whichever controller asks first)."""
    if POD_CONTROLLER_UID_INDEX not in indexer.get_indexers():
        indexer.add_indexers({POD_CONTROLLER_UID_INDEX: _controller_uid_index})


# Pods counted by their controller's UID and their state (`PodState`), so that an owner learns how many of its pods
# are active, Ready and labelled how without reading each one (Indexer.add_tally).
POD_STATE_TALLY = "podStateByController"


class PodState(NamedTuple):
    active: bool  # upstream's IsPodActive
    ready: bool
    labels: tuple[tuple[str, str], ...]  # sorted


def _controller_uid(pod: Pod) -> str | None:
    ref = controller_of(pod)
    return str(ref.get("uid") or "") if ref is not None else None


def pod_state(pod: Pod) -> PodState:
    md = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    labels = md.get("labels") or {}
    return PodState(phase not in ("Succeeded", "Failed") and not md.get("deletionTimestamp"), is_pod_ready(pod),
                    tuple(sorted((str(k), str(v)) for k, v in labels.items())) if isinstance(labels, dict) else ())  # fmt: skip


def add_pod_state_tally(indexer: Indexer) -> None:
    """Count the pods by controller and `PodState` (once per shared informer, whoever asks first)."""
    indexer.add_tally(POD_STATE_TALLY, _controller_uid, pod_state)


def orphans_of_namespace(indexer: Indexer, namespace: str) -> list[Pod]:
    """The pods of a namespace without a controller (needs the controller-UID index)."""
    return indexer.by_index(POD_CONTROLLER_UID_INDEX, f"{namespace}/{ORPHAN_POD_INDEX_KEY}")


def pods_by_owner(indexer: Indexer, owner: Mapping[str, Any], include_orphans: bool) -> list[Pod]:
    """The pods whose controller is `owner` and, with `include_orphans`, the orphans of its namespace (upstream:
    FilterPodsByOwner)."""
    md = owner.get("metadata") or {}
    pods: list[Pod] = indexer.by_index(POD_CONTROLLER_UID_INDEX, str(md.get("uid") or ""))
    if include_orphans:
        pods += orphans_of_namespace(indexer, str(md.get("namespace", "")))
    return pods
