"""The "0/N nodes are available: …" message: FitError's composition (upstream: framework/types_test.go's
TestFitError_Error) and the full message a failed scheduling cycle of the default profile leaves, preemption's part
included (the strings kube-scheduler v1.32 writes into PodScheduled and FailedScheduling events)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from pyk8s.scheduler import schedule_one
from pyk8s.scheduler.config import SchedulerConfig, config_from_dict, default_config
from pyk8s.scheduler.config_defaults import API_VERSION
from pyk8s.scheduler.framework.handle import FrameworkHandle
from pyk8s.scheduler.framework.interface import Code, CycleState, Diagnosis, FitError, Status
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import PodInfo, QueuedPodInfo
from pyk8s.scheduler.plugins.registry import build_framework
from pyk8s.scheduler.schedule_one import ScheduleAlgorithm

from .wrappers import make_node, make_pod

U = Code.UNSCHEDULABLE
PRE_FILTER_MSG = "Node(s) failed PreFilter plugin FalsePreFilter"
POST_FILTER_MSG = "Error running PostFilter plugin FailedPostFilter"


def each(*reasons: str) -> dict[str, Status]:
    return {f"node{i}": Status(U, r) for i, r in enumerate(reasons, 1)}


FILTER_1 = "Node(s) failed Filter plugin FalseFilter-1"
FILTER_2 = "Node(s) failed Filter plugin FalseFilter-2"

# (name, number of nodes, pre-filter message, node statuses, post-filter message, want)
FIT_ERROR_CASES = [
    (
        "nodes failed PreFilter",
        3, PRE_FILTER_MSG, each(PRE_FILTER_MSG, PRE_FILTER_MSG, PRE_FILTER_MSG), "",
        "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
    ),
    (
        "nodes failed PreFilter and the preemption also failed",
        3, PRE_FILTER_MSG, each(PRE_FILTER_MSG, PRE_FILTER_MSG, PRE_FILTER_MSG), POST_FILTER_MSG,
        "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. "
        "Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "one Filter plugin, no PostFilter message",
        3, "", each(FILTER_1, FILTER_1, FILTER_1), "",
        "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
    ),
    (
        "one Filter plugin and a PostFilter message",
        3, "", each(FILTER_1, FILTER_1, FILTER_1), POST_FILTER_MSG,
        "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. "
        "Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "two Filter plugins, no PostFilter message",
        3, "", each(FILTER_1, FILTER_1, FILTER_2), "",
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
        "2 Node(s) failed Filter plugin FalseFilter-1.",
    ),
    (
        "two Filter plugins and a PostFilter message",
        3, "", each(FILTER_1, FILTER_1, FILTER_2), POST_FILTER_MSG,
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, "
        "2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter",
    ),
    (
        "failed Permit",
        1, "", each("Node failed Permit plugin Permit-1"), "",
        "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
    ),
    (
        "failed Reserve",
        1, "", each("Node failed Reserve plugin Reserve-1"), "",
        "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "num_nodes", "pre_filter_msg", "statuses", "post_filter_msg", "want"),
    FIT_ERROR_CASES,
    ids=[c[0] for c in FIT_ERROR_CASES],
)
def test_fit_error_message(
    name: str, num_nodes: int, pre_filter_msg: str, statuses: dict[str, Status], post_filter_msg: str, want: str
) -> None:
    diagnosis = Diagnosis(node_to_status=statuses, pre_filter_msg=pre_filter_msg, post_filter_msg=post_filter_msg)
    assert FitError(make_pod("p"), num_nodes, diagnosis).message() == want


# -- what a failed scheduling cycle says --------------------------------------------------------------------------


def without_post_filter() -> SchedulerConfig:
    return config_from_dict({
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}],
    })  # fmt: skip


def cycle_message(
    nodes: list[dict[str, Any]], pod: dict[str, Any], pods: list[dict[str, Any]], config: SchedulerConfig
) -> str:
    snapshot = Snapshot.from_objects(nodes, pods)
    fw = build_framework(config, "default-scheduler", FrameworkHandle(snapshot))
    sched: Any = SimpleNamespace(algorithm=ScheduleAlgorithm(None, snapshot))  # all scheduling_cycle reads of it
    qpi = QueuedPodInfo(PodInfo(pod))
    _, _, status, fit = asyncio.run(schedule_one.scheduling_cycle(sched, fw, CycleState(), qpi, time.monotonic()))
    assert status is not None and status.code == Code.UNSCHEDULABLE and fit is not None
    assert status.message() == fit.message()
    return status.message()


def names(*values: str) -> dict[str, Any]:
    """A required node affinity with one term naming nodes by metadata.name, as the DaemonSet controller writes."""
    reqs = [{"key": "metadata.name", "operator": "In", "values": [v]} for v in values]
    term = {"matchFields": reqs}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def nominated(pod: dict[str, Any], node: str) -> dict[str, Any]:
    pod["status"] = {"nominatedNodeName": node}
    return pod


SMALL = [make_node(f"n{i}", cpu="1") for i in range(1, 5)]
TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}
TAINTED_N2 = [SMALL[0], make_node("n2", cpu="1", taints=[TAINT]), *SMALL[2:]]
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"

# (name, nodes, pod, pods on the nodes, config, want)
CYCLE_CASES = [
    (
        "no preemption part without a PostFilter plugin",
        SMALL[:2], make_pod("p", cpu="2"), [], without_post_filter(),
        "0/2 nodes are available: 2 Insufficient cpu.",
    ),
    (
        "no victims anywhere",
        SMALL[:2], make_pod("p", cpu="2"), [], default_config(),
        f"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 {NO_VICTIMS}.",
    ),
    (
        "preemption helps nowhere",
        SMALL[:2], make_pod("p", node_selector={"disk": "ssd"}), [], default_config(),
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}.",
    ),
    (
        # A DaemonSet pod whose node is full: the other nodes fall outside NodeAffinity's PreFilterResult and get
        # the framework's generic reason, which preemption does not try.
        "pinned to a full node",
        SMALL, make_pod("p", cpu="2", affinity=names("n1")), [], default_config(),
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        f"preemption: 0/4 nodes are available: 1 {NO_VICTIMS}, 3 {NOT_HELPFUL}.",
    ),
    (
        # The nominated node is judged first though outside the PreFilterResult, and keeps its own reason.
        "pinned to a full node, nominated to another",
        SMALL, nominated(make_pod("p", cpu="2", affinity=names("n1")), "n2"), [], default_config(),
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
        f"2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/4 nodes are available: 1 {NO_VICTIMS}, "
        f"3 {NOT_HELPFUL}.",
    ),
    (
        # TaintToleration, which rejects the nominated node before NodeAffinity does, joins the others' reason.
        "pinned to a full node, nominated to a tainted one",
        TAINTED_N2, nominated(make_pod("p", cpu="2", affinity=names("n1")), "n2"), [], default_config(),
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {k: v}, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity TaintToleration]. "
        f"preemption: 0/4 nodes are available: 1 {NO_VICTIMS}, 3 {NOT_HELPFUL}.",
    ),
    (
        "pinned to a node that does not exist",
        SMALL, make_pod("p", affinity=names("ghost")), [], default_config(),
        "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        f"preemption: 0/4 nodes are available: 4 {NOT_HELPFUL}.",
    ),
    (
        "NodeAffinity's PreFilter rejects conflicting node names",
        SMALL, make_pod("p", affinity=names("n1", "n2")), [], default_config(),
        f"0/4 nodes are available: pod affinity terms conflict. preemption: 0/4 nodes are available: 4 {NOT_HELPFUL}.",
    ),
    (
        "victims that would not make room",
        SMALL[:2], make_pod("p", cpu="2", priority=100),
        [make_pod("v", cpu="500m", node_name="n1"), make_pod("w", cpu="500m", node_name="n2", priority=1000)],
        default_config(),
        f"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 1 Insufficient cpu, "
        f"1 {NO_VICTIMS}.",
    ),
    (
        "not allowed to preempt",
        SMALL[:2], make_pod("p", cpu="2", preemptionPolicy="Never"), [], default_config(),
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "nodes", "pod", "pods", "config", "want"), CYCLE_CASES, ids=[c[0] for c in CYCLE_CASES]
)
def test_failed_cycle_message(
    name: str,
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    config: SchedulerConfig,
    want: str,
) -> None:
    assert cycle_message(nodes, pod, pods, config) == want
