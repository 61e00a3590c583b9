"""The RollingUpdate strategy (upstream: pkg/controller/deployment/rolling.go): each sync either grows the new
ReplicaSet as far as maxSurge allows or, failing that, shrinks old ones as far as maxUnavailable allows (their
unhealthy replicas first, oldest ReplicaSet first), then reports progress; a finished rollout cleans up old
revisions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import util
from .progress import sync_rollout_status
from .sync import cleanup_deployment, get_all_replica_sets_and_sync_revision, scale_and_record
from .util import Object

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController


async def rollout_rolling(dc: DeploymentController, d: dict[str, Any], rss: list[Object]) -> None:
    new_rs, old = await get_all_replica_sets_and_sync_revision(dc, d, rss, True)
    assert new_rs is not None  # created when missing
    all_rss: list[Object | None] = [*old, new_rs]
    if await reconcile_new_replica_set(dc, all_rss, new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if await reconcile_old_replica_sets(dc, all_rss, util.active(old), new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old, d)
    await sync_rollout_status(dc, all_rss, new_rs, d)


async def reconcile_new_replica_set(dc: DeploymentController, all_rss: list[Object | None], new_rs: Object,
                                    d: Object) -> bool:  # fmt: skip
    replicas = util.spec_replicas(d)
    if util.spec_replicas(new_rs) == replicas:
        return False
    if util.spec_replicas(new_rs) > replicas:
        scaled, _ = await scale_and_record(dc, new_rs, replicas, d)
        return scaled
    scaled, _ = await scale_and_record(dc, new_rs, util.new_rs_new_replicas(d, all_rss, new_rs), d)
    return scaled


async def reconcile_old_replica_sets(dc: DeploymentController, all_rss: list[Object | None], old: list[Object],
                                     new_rs: Object, d: Object) -> bool:  # fmt: skip
    if util.replica_count(old) == 0:
        return False
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    new_unavailable = util.spec_replicas(new_rs) - util.status_int(new_rs, "availableReplicas")
    max_scaled_down = util.replica_count(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    old, cleaned = await cleanup_unhealthy_replicas(dc, old, d, max_scaled_down)
    scaled_down = await scale_down_old_replica_sets(dc, [*old, new_rs], old, d)
    return cleaned + scaled_down > 0


async def cleanup_unhealthy_replicas(dc: DeploymentController, old: list[Object], d: Object,
                                     max_cleanup: int) -> tuple[list[Object], int]:  # fmt: skip
    """Remove old replicas that are not available first: they cost no availability (upstream:
    cleanupUnhealthyReplicas)."""
    old = util.by_creation(old)
    total = 0
    for i, rs in enumerate(old):
        if total >= max_cleanup:
            break
        replicas, available = util.spec_replicas(rs), util.status_int(rs, "availableReplicas")
        if replicas == 0 or replicas <= available:
            continue  # no unhealthy replicas (a status not yet caught up with a scale-down counts as none)
        count = min(max_cleanup - total, replicas - available)
        _, old[i] = await scale_and_record(dc, rs, replicas - count, d)
        total += count
    return old, total


async def scale_down_old_replica_sets(dc: DeploymentController, all_rss: list[Object], old: list[Object],
                                      d: Object) -> int:  # fmt: skip
    """Shrink old ReplicaSets, oldest first, by as much availability as maxUnavailable spares (upstream:
    scaleDownOldReplicaSetsForRollingUpdate)."""
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    # Deliberately stricter than upstream, which sums status.availableReplicas: a ReplicaSet just scaled down still
    # counts the pods it is deleting until its next status write, so that sum can run ahead of the pods and let a
    # large rollout dip below maxUnavailable (bench/controllers.py saw 22,212 Ready pods of a promised 22,500 at
    # 30,000). A ReplicaSet is counted at most at its spec.replicas: what it will have once its deletions land.
    available = sum(min(util.status_int(rs, "availableReplicas"), util.spec_replicas(rs)) for rs in all_rss)
    if available <= min_available:
        return 0
    to_scale_down = available - min_available
    total = 0
    for rs in util.by_creation(old):
        if total >= to_scale_down:
            break
        if util.spec_replicas(rs) == 0:
            continue
        count = min(util.spec_replicas(rs), to_scale_down - total)
        await scale_and_record(dc, rs, util.spec_replicas(rs) - count, d)
        total += count
    return total
