"""ImageLocality's vectorized score, and the vectorized default normalisation, equal their per-node forms."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import CycleState
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.plugins.imagelocality import ImageLocality

from .wrappers import make_node, make_pod

IMAGES = ["nginx:1.25", "redis", "redis:latest", "gcr.io/x/y:2", "busybox@sha256:abc", "registry:5000/app"]
MB = 1024 * 1024


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.lists(st.tuples(st.sampled_from(IMAGES), st.integers(0, 3000)), max_size=4), min_size=1, max_size=8
    ),
    pod_images=st.lists(st.sampled_from(IMAGES), min_size=0, max_size=3),
    init_images=st.lists(st.sampled_from(IMAGES), max_size=2),
)
def test_vector_score_equals_per_node(nodes, pod_images, init_images):
    node_objs = [
        make_node(f"n{i}", images=[{"names": [name], "sizeBytes": mb * MB} for name, mb in imgs])
        for i, imgs in enumerate(nodes)
    ]
    snapshot = Snapshot.from_objects(node_objs)
    plugin = ImageLocality.new(None, FrameworkHandle(snapshot))
    pod = make_pod("p")
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": img} for i, img in enumerate(pod_images)]
    if init_images:
        pod["spec"]["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init_images)]
    state = CycleState()
    per_node = [plugin.score(state, pod, ni)[0] for ni in snapshot.node_info_list]
    idx = np.arange(snapshot.num_nodes(), dtype=np.int64)
    assert plugin.score_vector(state, pod, snapshot, idx).tolist() == per_node


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-5, 10**6), max_size=30), st.booleans(), st.sampled_from([100, 10, 1]))
def test_default_normalize_vector_equals_per_node(raw, reverse, max_priority):
    from pyk8s.scheduler.framework.interface import NodeScore
    from pyk8s.scheduler.plugins.normalize import default_normalize_score, default_normalize_vector

    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    default_normalize_score(max_priority, reverse, scores)
    got = default_normalize_vector(max_priority, reverse, np.asarray(raw, dtype=np.int64))
    assert got.tolist() == [s.score for s in scores]
