"""`pods/eviction`: a delete that respects PodDisruptionBudgets (upstream: pkg/registry/core/pod/storage/
eviction.go), what `kubectl drain` uses.

A pod that is being deleted, or that does not run (Pending, Succeeded, Failed), is deleted at once. Otherwise
the budget covering it decides: none → deleted; more than one → 500 (upstream supports only one); a budget whose
status is behind its spec, or that allows no disruption → 429 "Cannot evict pod as it would violate the pod's
disruption budget." with a DisruptionBudget cause saying how many healthy pods it needs and has; else the
budget's status takes the disruption (disruptionsAllowed - 1, the pod in disruptedPods, a conflict restarts the
check) and the pod is deleted. A pod that is not Ready may go without counting when the budget is met
(`unhealthyPodEvictionPolicy` IfHealthyBudget) or always (AlwaysAllow). Before deletion the pod gets the
DisruptionTarget condition (reason EvictionByEvictionAPI). The request is admitted as a create of the Eviction
(subresources.py); the pod's condition and deletion are the eviction's own writes and are not admitted again, as
upstream's are not (`ValidateAllObjectFunc`).
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.meta import Object, rfc3339, set_condition
from ..api.selectors import SelectorError, label_selector_from_object
from .registry.rest import Context, DeleteOptions, RESTStore

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MAX_CONFLICT_RETRIES = 5


def _ready(pod: Object) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())  # fmt: skip


def _budgets_for(pdbs: RESTStore, pod: Object) -> list[Object]:
    md = pod.get("metadata") or {}
    labels = md.get("labels") or {}
    entries, _ = pdbs.cacher.list(pdbs.resource.key_prefix)
    out = []
    for en in entries:
        pdb = en.obj
        if (pdb.get("metadata") or {}).get("namespace") != md.get("namespace"):
            continue
        try:
            # policy/v1: a missing selector selects nothing, an empty one every pod of the namespace.
            selector = label_selector_from_object((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.matches(labels):
            out.append(pdb)
    return out


def _violation(cause: str) -> errors.StatusError:
    err = errors.too_many_requests(VIOLATION, retry_after=0)
    err.retry_after = None
    err.details = {"causes": [{"type": "DisruptionBudget", "message": cause}]}
    return err


async def evict(pods: RESTStore, pdbs: RESTStore, namespace: str, name: str, opts: DeleteOptions, ctx: Context) -> None:
    for _ in range(MAX_CONFLICT_RETRIES):
        pod = await pods.get(namespace, name)
        phase = (pod.get("status") or {}).get("phase")
        if (pod.get("metadata") or {}).get("deletionTimestamp") or phase in ("Pending", "Succeeded", "Failed"):
            await _delete(pods, namespace, name, opts, ctx, mark=False)
            return
        budgets = _budgets_for(pdbs, pod)
        if not budgets:
            await _delete(pods, namespace, name, opts, ctx)
            return
        if len(budgets) > 1:
            raise errors.internal_error(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            )
        pdb = budgets[0]
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        pmd = pdb.get("metadata") or {}
        healthy, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if not _ready(pod):
            policy = spec.get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
            if policy == "AlwaysAllow" or (healthy >= desired and desired > 0):
                # Only if it is still the pod judged unhealthy: one that became Ready since is looked at again.
                try:
                    await _delete(pods, namespace, name, opts, ctx,
                                  expect_rv=str((pod.get("metadata") or {}).get("resourceVersion") or ""))  # fmt: skip
                except errors.Conflict:
                    continue
                return
        if int(status.get("observedGeneration") or 0) < int(pmd.get("generation") or 0):
            raise _violation(f"The disruption budget {pmd.get('name')} is still being processed by the server.")
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise errors.forbidden_request("poddisruptionbudgets", str(pmd.get("name")),
                                           "pdb disruptions allowed is negative", "policy")  # fmt: skip
        if allowed == 0:
            raise _violation(f"The disruption budget {pmd.get('name')} needs {desired} healthy pods and has "
                             f"{healthy} currently")  # fmt: skip
        if not opts.dry_run:  # a dry run changes nothing, the budget neither
            try:
                take = _take_disruption(pdbs, str(pmd.get("name")), str(pmd.get("resourceVersion") or ""), name)
                await pdbs.update(namespace, str(pmd.get("name")), take, ctx, subresource="status")
            except errors.Conflict:
                continue  # the budget moved: look again
        await _delete(pods, namespace, name, opts, ctx)
        return
    raise errors.too_many_requests("the disruption budget kept changing; try again", retry_after=1)


def _take_disruption(pdbs: RESTStore, pdb_name: str, rv: str, pod_name: str) -> Any:
    """The status update that records one disruption, if the budget is still the one the decision was made on."""

    async def take(current: Object | None) -> Object:
        if current is None:
            raise pdbs.not_found(pdb_name)
        if str(current["metadata"].get("resourceVersion")) != rv:
            raise pdbs.conflict(pdb_name)
        st = current.setdefault("status", {})
        st["disruptionsAllowed"] = int(st.get("disruptionsAllowed") or 0) - 1
        st.setdefault("disruptedPods", {})[pod_name] = rfc3339()
        return current

    return take


async def _delete(pods: RESTStore, namespace: str, name: str, opts: DeleteOptions, ctx: Context, *,
                  mark: bool = True, expect_rv: str = "") -> None:  # fmt: skip
    """Mark the pod (DisruptionTarget) and delete it; with `expect_rv`, only while the pod is still at that
    resourceVersion (Conflict otherwise), as upstream's eviction of an unhealthy pod."""
    if expect_rv and (opts.dry_run or not mark):
        current = await pods.get(namespace, name)
        if str(current["metadata"].get("resourceVersion")) != expect_rv:
            raise pods.conflict(name)
    if mark and not opts.dry_run:

        async def condition(pod: Object | None) -> Object:
            if pod is None:
                raise pods.not_found(name)
            if expect_rv and str(pod["metadata"].get("resourceVersion")) != expect_rv:
                raise pods.conflict(name)
            set_condition(pod, {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                                "lastTransitionTime": rfc3339(), "reason": "EvictionByEvictionAPI",
                                "message": "Eviction API: evicting"})  # fmt: skip
            return pod

        await pods.update(namespace, name, condition, ctx, subresource="status", admit=False)
    await pods.delete(namespace, name, opts, ctx, admit=False)
