"""The Recreate strategy (upstream: pkg/controller/deployment/recreate.go): scale every old ReplicaSet to zero,
wait until none of their pods is still running, then create the new ReplicaSet at full size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import util
from .progress import sync_rollout_status
from .sync import cleanup_deployment, get_all_replica_sets_and_sync_revision, scale_and_record
from .util import Object

if TYPE_CHECKING:
    from .deployment_controller import DeploymentController


async def rollout_recreate(dc: DeploymentController, d: dict[str, Any], rss: list[Object],
                           pod_map: Mapping[str, Sequence[Object]]) -> None:  # fmt: skip
    new_rs, old = await get_all_replica_sets_and_sync_revision(dc, d, rss, False)
    all_rss: list[Object | None] = [*old, new_rs]
    scaled_down = False
    for rs in util.active(old):
        scaled, _ = await scale_and_record(dc, rs, 0, d)
        scaled_down = scaled_down or scaled
    if scaled_down or old_pods_running(new_rs, old, pod_map):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if new_rs is None:
        new_rs, old = await get_all_replica_sets_and_sync_revision(dc, d, rss, True)
        all_rss = [*old, new_rs]
    assert new_rs is not None
    await scale_and_record(dc, new_rs, util.spec_replicas(d), d)
    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old, d)
    await sync_rollout_status(dc, all_rss, new_rs, d)


def old_pods_running(new_rs: Object | None, old: Sequence[Object], pod_map: Mapping[str, Sequence[Object]]) -> bool:
    """Whether an old ReplicaSet still has pods, or any pod of one is not yet terminal (upstream:
    oldPodsRunning)."""
    if util.actual_count(old) > 0:
        return True
    new_uid = ((new_rs or {}).get("metadata") or {}).get("uid")
    for rs_uid, pods in pod_map.items():
        if new_rs is not None and rs_uid == new_uid:
            continue
        if any((p.get("status") or {}).get("phase") not in ("Failed", "Succeeded") for p in pods):
            return True
    return False
