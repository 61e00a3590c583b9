"""The ImageLocality Score plugin (upstream: plugins/imagelocality/image_locality.go): favours nodes that already
hold the pod's container images, by image size scaled by how widely the image has spread (so pods do not all pile
onto the few nodes that pulled it first), clamped between a per-container minimum and maximum. It reads the
framework's per-node image summaries (NodeInfo.image_states, framework/image_states.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..framework.image_states import ImageStateSummary
from ..framework.interface import MAX_NODE_SCORE, CycleState, Pod, ScorePlugin, Status
from .normalize import go_div

if TYPE_CHECKING:
    from ..framework.snapshot import Snapshot
    from ..framework.types import NodeInfo

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB  # below this summed size the score is 0
MAX_CONTAINER_THRESHOLD = 1000 * MB  # the cap, per container of the pod


def normalized_image_name(name: str) -> str:
    """The name as the container runtime reports it: ":latest" appended when there is no tag or digest (a ':'
    only inside the registry host does not count)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """The image's size times the fraction of nodes holding it, in float64 and truncated as upstream."""
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def sum_image_scores(node_info: NodeInfo, pod: Pod, total_num_nodes: int) -> int:
    spec = pod.get("spec") or {}
    total = 0
    states = node_info.image_states
    for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
        state = states.get(normalized_image_name(c.get("image") or ""))
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Map the summed image score linearly from [min, max threshold] onto [0, MaxNodeScore]."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # Go's int64 division; the denominator is negative only for a pod without containers, where the
    # numerator is 0.
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(ScorePlugin):
    name: ClassVar[str] = "ImageLocality"

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> ImageLocality:
        return cls(handle)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        total_num_nodes = self.handle.snapshot.num_nodes()
        spec = pod.get("spec") or {}
        num_containers = len(spec.get("initContainers") or ()) + len(spec.get("containers") or ())
        return calculate_priority(sum_image_scores(node_info, pod, total_num_nodes), num_containers), None

    def score_vector(self, state: CycleState, pod: Pod, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        """`score` over the nodes at `idx`: only nodes holding one of the pod's images can score above 0."""
        spec = pod.get("spec") or {}
        containers = (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
        out = np.zeros(len(idx), dtype=np.int64)
        if not containers:
            return out
        holders = snapshot.node_derived(("ImageLocality", "holders"), lambda: _image_holders(snapshot))
        total_num_nodes = snapshot.num_nodes()
        sums = np.zeros(total_num_nodes, dtype=np.int64)
        found = False
        for c in containers:
            entry = holders.get(normalized_image_name(c.get("image") or ""))
            if entry is not None:
                positions, summaries = entry
                sums[positions] += [scaled_image_score(s, total_num_nodes) for s in summaries]
                found = True
        if not found:
            return out  # below the minimum threshold everywhere: 0
        max_threshold = MAX_CONTAINER_THRESHOLD * len(containers)
        clipped = np.clip(sums[idx], MIN_THRESHOLD, max_threshold)
        return (MAX_NODE_SCORE * (clipped - MIN_THRESHOLD)) // (max_threshold - MIN_THRESHOLD)


def _image_holders(snapshot: Snapshot) -> dict[str, tuple[np.ndarray, list[ImageStateSummary]]]:
    """Image name -> (positions of the nodes holding it, their summaries), from the snapshot's NodeInfos."""
    acc: dict[str, tuple[list[int], list[ImageStateSummary]]] = {}
    for i, ni in enumerate(snapshot.node_info_list):
        for name, summary in ni.image_states.items():
            positions, summaries = acc.setdefault(name, ([], []))
            positions.append(i)
            summaries.append(summary)
    return {name: (np.asarray(p, dtype=np.int64), s) for name, (p, s) in acc.items()}
