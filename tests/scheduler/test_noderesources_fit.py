"""NodeResourcesFit: PreFilter/Filter, queueing hints, events and args (cases re-expressed from upstream's
noderesources/fit_test.go and apis/config/validation tests, v1.32)."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.framework.features import process_gates_set
from pyk8s.scheduler.framework.interface import NODE, POD, ActionType, Code, CycleState, QueueingHint, Status
from pyk8s.scheduler.framework.snapshot import Snapshot
from pyk8s.scheduler.framework.types import pod_requests_pair
from pyk8s.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from pyk8s.scheduler.plugins.noderesources.fit import (
    InsufficientResource,
    fits_request,
    have_any_requested_resources_increased,
    is_extended_resource_name,
    is_fit,
)
from tests.scheduler.test_noderesources_support import (
    EXT_A,
    EXT_B,
    HUGE_PAGE_A,
    K8S_IO_A,
    K8S_IO_B,
    cap_node,
    handle,
    node,
    node_info,
    pod,
    res,
)


def _alloc(milli_cpu: int, memory: int, pods: int, ext_a: int, eph: int, huge: int) -> dict[str, str]:
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        EXT_A: str(ext_a),
        "ephemeral-storage": str(eph),
        HUGE_PAGE_A: str(huge),
    }


def _run_filter(p: NodeResourcesFit, the_pod: dict, ni) -> Status | None:
    state = CycleState()
    _, st = p.pre_filter(state, the_pod, [ni])
    assert st is None
    got = p.filter(state, the_pod, ni)
    # the vector form agrees on this node
    snap = Snapshot([ni])
    assert bool(p.filter_vector(state, the_pod, snap)[0]) == (got is None)
    return got


def _insufficient(name: str) -> str:
    return f"Insufficient {name}"


CPU, MEM, EPH = "cpu", "memory", "ephemeral-storage"

# (name, pod, existing pod on the node, args, want reasons) — node: 10m cpu, 20 memory, 32 pods, 5 example.com/aaa,
# 20 ephemeral-storage, 5 hugepages-2Mi.
ENOUGH_CASES = [
    ("no resources requested always fits", pod(), pod(res(10, 20)), None, []),
    ("too many resources fails", pod(res(1, 1)), pod(res(10, 20)), None, [_insufficient(CPU), _insufficient(MEM)]),
    ("init container cpu", pod(res(1, 1), init=[res(3, 1)]), pod(res(8, 19)), None, [_insufficient(CPU)]),
    (
        "highest init container cpu",
        pod(res(1, 1), init=[res(3, 1), res(2, 1)]),
        pod(res(8, 19)),
        None,
        [_insufficient(CPU)],
    ),
    ("init container memory", pod(res(1, 1), init=[res(1, 3)]), pod(res(9, 19)), None, [_insufficient(MEM)]),
    (
        "highest init container memory",
        pod(res(1, 1), init=[res(1, 3), res(1, 2)]),
        pod(res(9, 19)),
        None,
        [_insufficient(MEM)],
    ),
    ("init container max, not sum", pod(res(1, 1), init=[res(1, 1)]), pod(res(9, 19)), None, []),
    ("multiple init containers max, not sum", pod(res(1, 1), init=[res(1, 1), res(1, 1)]), pod(res(9, 19)), None, []),
    ("both resources fit", pod(res(1, 1)), pod(res(5, 5)), None, []),
    ("one resource memory fits", pod(res(2, 1)), pod(res(9, 5)), None, [_insufficient(CPU)]),
    ("one resource cpu fits", pod(res(1, 2)), pod(res(5, 19)), None, [_insufficient(MEM)]),
    ("equal edge case", pod(res(5, 1)), pod(res(5, 19)), None, []),
    ("equal edge case for init container", pod(res(4, 1), init=[res(5, 1)]), pod(res(5, 19)), None, []),
    ("extended resource fits", pod(res(scalars={EXT_A: 1})), pod(res()), None, []),
    ("extended resource fits for init container", pod(res(), init=[res(scalars={EXT_A: 1})]), pod(res()), None, []),
    (
        "extended resource capacity enforced",
        pod(res(1, 1, scalars={EXT_A: 10})),
        pod(res(scalars={EXT_A: 0})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource capacity enforced for init container",
        pod(res(), init=[res(1, 1, scalars={EXT_A: 10})]),
        pod(res(scalars={EXT_A: 0})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource allocatable enforced",
        pod(res(1, 1, scalars={EXT_A: 1})),
        pod(res(scalars={EXT_A: 5})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource allocatable enforced for init container",
        pod(res(), init=[res(1, 1, scalars={EXT_A: 1})]),
        pod(res(scalars={EXT_A: 5})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        pod(res(1, 1, scalars={EXT_A: 3}), res(1, 1, scalars={EXT_A: 3})),
        pod(res(scalars={EXT_A: 2})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource allocatable admits multiple init containers",
        pod(res(), init=[res(1, 1, scalars={EXT_A: 3}), res(1, 1, scalars={EXT_A: 3})]),
        pod(res(scalars={EXT_A: 2})),
        None,
        [],
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        pod(res(), init=[res(1, 1, scalars={EXT_A: 6}), res(1, 1, scalars={EXT_A: 3})]),
        pod(res(scalars={EXT_A: 2})),
        None,
        [_insufficient(EXT_A)],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        pod(res(1, 1, scalars={EXT_B: 1})),
        pod(res()),
        None,
        [_insufficient(EXT_B)],
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        pod(res(), init=[res(1, 1, scalars={EXT_B: 1})]),
        pod(res()),
        None,
        [_insufficient(EXT_B)],
    ),
    (
        "kubernetes.io resource capacity enforced",
        pod(res(1, 1, scalars={K8S_IO_A: 10})),
        pod(res()),
        None,
        [_insufficient(K8S_IO_A)],
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        pod(res(), init=[res(1, 1, scalars={K8S_IO_B: 10})]),
        pod(res()),
        None,
        [_insufficient(K8S_IO_B)],
    ),
    (
        "hugepages resource capacity enforced",
        pod(res(1, 1, scalars={HUGE_PAGE_A: 10})),
        pod(res(scalars={HUGE_PAGE_A: 0})),
        None,
        [_insufficient(HUGE_PAGE_A)],
    ),
    (
        "hugepages resource capacity enforced for init container",
        pod(res(), init=[res(1, 1, scalars={HUGE_PAGE_A: 10})]),
        pod(res(scalars={HUGE_PAGE_A: 0})),
        None,
        [_insufficient(HUGE_PAGE_A)],
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        pod(res(1, 1, scalars={HUGE_PAGE_A: 3}), res(1, 1, scalars={HUGE_PAGE_A: 3})),
        pod(res(scalars={HUGE_PAGE_A: 2})),
        None,
        [_insufficient(HUGE_PAGE_A)],
    ),
    (
        "skip checking ignored extended resource",
        pod(res(1, 1, scalars={EXT_B: 1})),
        pod(res()),
        {"ignoredResources": [EXT_B]},
        [],
    ),
    (
        "resources + pod overhead fits",
        pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        pod(res(5, 5)),
        None,
        [],
    ),
    (
        "requests + overhead does not fit for memory",
        pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        pod(res(5, 5)),
        None,
        [_insufficient(MEM)],
    ),
    (
        "skip checking ignored extended resource via resource groups",
        pod(res(1, 1, scalars={EXT_B: 1, K8S_IO_A: 1})),
        pod(res()),
        {"ignoredResourceGroups": ["example.com"]},
        [_insufficient(K8S_IO_A)],
    ),
    (
        "skip checking extended resource request with quantity zero",
        pod(res(1, 1, scalars={EXT_A: 0})),
        pod(res(scalars={EXT_A: 6})),
        None,
        [],
    ),
    (
        "kubernetes.io resources cannot be ignored",
        pod(res(1, 1, scalars={K8S_IO_A: 1})),
        pod(res()),
        {"ignoredResources": [K8S_IO_A], "ignoredResourceGroups": ["kubernetes.io"]},
        [_insufficient(K8S_IO_A)],
    ),
]


@pytest.mark.parametrize(
    ("name", "the_pod", "existing", "args", "want"), ENOUGH_CASES, ids=[c[0] for c in ENOUGH_CASES]
)
def test_enough_requests(name, the_pod, existing, args, want):
    p = NodeResourcesFit.new(args, handle())
    ni = node_info(node("n", _alloc(10, 20, 32, 5, 20, 5)), existing)
    got = _run_filter(p, the_pod, ni)
    if want:
        assert got == Status(Code.UNSCHEDULABLE, *want)
    else:
        assert got is None


# (name, pod, existing pod on the node, want reasons with PodLevelResources on, and off) — upstream's pod-level
# cases of TestEnoughRequests; the node as above
POD_LEVEL_CASES = [
    ("skip checking resource request with quantity zero", pod(res(scalars={EXT_A: 1})),
     pod(res(20, 30, scalars={EXT_A: 1})), [], []),
    ("both pod-level and container-level resources fit", pod(res(1, 1), pod_requests={"cpu": "1m", "memory": "2"}),
     pod(res(5, 5)), [], []),
    ("pod-level cpu resource not fit", pod(res(1, 1), pod_requests={"cpu": "7m", "memory": "2"}), pod(res(5, 5)),
     [_insufficient(CPU)], []),
    ("pod-level memory resource not fit", pod(res(1, 1), pod_requests={"cpu": "3m", "memory": "2"}), pod(res(5, 19)),
     [_insufficient(MEM)], []),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     pod(res(1, 1), init=[res(1, 1)], pod_requests={"cpu": "3m", "memory": "2"}), pod(res(5, 19)),
     [_insufficient(MEM)], []),
    ("pod-level hugepages are not pod-level resources in v1.32",
     pod(res(1, 1), pod_requests={"cpu": "1m", HUGE_PAGE_A: "10"}), pod(res()), [], []),
    ("existing pods count their pod-level requests", pod(res(2, 1)), pod(res(1, 1), pod_requests={"cpu": "9m"}),
     [_insufficient(CPU)], []),
]  # fmt: skip


@pytest.mark.parametrize("gate", [True, False], ids=["PodLevelResources", "gate off"])
@pytest.mark.parametrize(
    ("name", "the_pod", "existing", "want_on", "want_off"), POD_LEVEL_CASES, ids=[c[0] for c in POD_LEVEL_CASES]
)
def test_enough_requests_pod_level(name, the_pod, existing, want_on, want_off, gate):
    p = NodeResourcesFit.new(None, handle(PodLevelResources=gate))
    with process_gates_set({"PodLevelResources": gate}):
        ni = node_info(node("n", _alloc(10, 20, 32, 5, 20, 5)), existing)
    want = want_on if gate else want_off
    got = _run_filter(p, the_pod, ni)
    assert got == (Status(Code.UNSCHEDULABLE, *want) if want else None)


@pytest.mark.parametrize(
    ("the_pod", "existing", "want"),
    [
        (pod(res(1, 1)), pod(res(10, 20)), [InsufficientResource(CPU, "Insufficient cpu", 1, 10, 10),
                                            InsufficientResource(MEM, "Insufficient memory", 1, 20, 20)]),
        (pod(res(1, 1), init=[res(3, 1)]), pod(res(8, 19)), [InsufficientResource(CPU, "Insufficient cpu", 3, 8, 10)]),
        (pod(res(1, 1, scalars={EXT_A: 10})), pod(res()), [InsufficientResource(EXT_A, _insufficient(EXT_A), 10, 0, 5)]),
        (pod(res(1, 1, scalars={EXT_B: 1})), pod(res()), [InsufficientResource(EXT_B, _insufficient(EXT_B), 1, 0, 0)]),
        (pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}), pod(res(5, 5)),
         [InsufficientResource(MEM, "Insufficient memory", 16, 5, 20)]),
    ],
)  # fmt: skip
def test_insufficient_resource_details(the_pod, existing, want):
    ni = node_info(node("n", _alloc(10, 20, 32, 5, 20, 5)), existing)
    assert fits_request(pod_requests_pair(the_pod)[0], ni) == want


@pytest.mark.parametrize(
    ("the_pod", "existing"),
    [
        (pod(), pod(res(10, 20))),
        (pod(res(1, 1)), pod(res(5, 5))),
        (pod(res(5, 1)), pod(res(5, 19))),
        (pod(res(5, 1), init=[res(5, 1)]), pod(res(5, 19))),
    ],
    ids=["no resources", "both fit", "equal edge", "equal edge init"],
)
def test_not_enough_pods(the_pod, existing):
    p = NodeResourcesFit.new(None, handle())
    ni = node_info(node("n", _alloc(10, 20, 1, 0, 0, 0)), existing)
    assert _run_filter(p, the_pod, ni) == Status(Code.UNSCHEDULABLE, "Too many pods")


def test_too_many_pods_comes_first():
    p = NodeResourcesFit.new(None, handle())
    ni = node_info(node("n", _alloc(10, 20, 1, 0, 0, 0)), pod(res(10, 20)))
    got = _run_filter(p, pod(res(1, 1)), ni)
    assert got == Status(Code.UNSCHEDULABLE, "Too many pods", "Insufficient cpu", "Insufficient memory")


@pytest.mark.parametrize(
    ("the_pod", "existing", "want"),
    [
        (pod(res(1, 1)), pod(res(2, 10)), None),
        (pod(res(eph=25)), pod(res(2, 2)), [_insufficient(EPH)]),
        (pod(res(eph=5)), pod(res(2, 2, eph=10)), None),
        (pod(res(eph=10)), pod(res(2, 2)), None),
    ],
    ids=["empty storage requested", "ephemeral request exceeds allocatable", "ephemeral sufficient", "pod fits"],
)
def test_storage_requests(the_pod, existing, want):
    p = NodeResourcesFit.new(None, handle())
    ni = node_info(node("n", _alloc(10, 20, 32, 5, 20, 5)), existing)
    got = _run_filter(p, the_pod, ni)
    assert got == (Status(Code.UNSCHEDULABLE, *want) if want else None)


@pytest.mark.parametrize(
    ("sidecars_enabled", "the_pod", "want_pre_filter", "want_filter"),
    [
        (False, pod(None), None, None),
        (
            False,
            pod(None, sidecars=[None]),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "Pod has a restartable init container and the SidecarContainers feature is disabled",
            ),
            None,
        ),
        (True, pod(None), None, None),
        (True, pod(None, sidecars=[None]), None, None),
        (True, pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}]), None, None),
        (True, pod({"cpu": "1m"}, sidecars=[{"cpu": "2m"}]), None, Status(Code.UNSCHEDULABLE, "Insufficient cpu")),
    ],
    ids=[
        "no sidecar, gate off",
        "sidecar, gate off",
        "no sidecar, gate on",
        "sidecar, gate on",
        "total within allocatable",
        "total exceeds allocatable",
    ],
)
def test_restartable_init_containers(sidecars_enabled, the_pod, want_pre_filter, want_filter):
    p = NodeResourcesFit.new(None, handle(SidecarContainers=sidecars_enabled))
    ni = node_info(node("n", _alloc(2, 0, 1, 0, 0, 0)))
    state = CycleState()
    _, st = p.pre_filter(state, the_pod, [ni])
    assert st == want_pre_filter
    if st is None:
        assert p.filter(state, the_pod, ni) == want_filter


def test_filter_without_pre_filter_is_an_error():
    p = NodeResourcesFit.new(None, handle())
    ni = node_info(node("n", _alloc(10, 20, 32, 0, 0, 0)))
    st = p.filter(CycleState(), pod(), ni)
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'
    assert not p.filter_vector(CycleState(), pod(), Snapshot([ni])).any()


def test_extended_resource_names():
    assert is_extended_resource_name("example.com/aaa")
    assert not is_extended_resource_name("kubernetes.io/something")
    assert not is_extended_resource_name("subdomain.kubernetes.io/something")
    assert not is_extended_resource_name("cpu")
    assert not is_extended_resource_name("requests.example.com/x")
    assert not is_extended_resource_name("hugepages-2Mi")


# -- events and queueing hints -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "pod_action", "node_action"),
    [
        (
            {"InPlacePodVerticalScaling": True, "SchedulerQueueingHints": False},
            ActionType.UPDATE_POD_SCALE_DOWN | ActionType.DELETE,
            ActionType.ADD
            | ActionType.UPDATE_NODE_ALLOCATABLE
            | ActionType.UPDATE_NODE_TAINT
            | ActionType.UPDATE_NODE_LABEL,
        ),
        (
            {"SchedulerQueueingHints": True},
            ActionType.DELETE,
            ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE,
        ),
        (
            {"InPlacePodVerticalScaling": False, "SchedulerQueueingHints": False},
            ActionType.DELETE,
            ActionType.ADD
            | ActionType.UPDATE_NODE_ALLOCATABLE
            | ActionType.UPDATE_NODE_TAINT
            | ActionType.UPDATE_NODE_LABEL,
        ),
    ],
    ids=["in-place scaling on", "queueing hints on", "in-place scaling off"],
)
def test_events_to_register(gates, pod_action, node_action):
    events = NodeResourcesFit.new(None, handle(**gates)).events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [(POD, pod_action), (NODE, node_action)]
    assert all(e.hint is not None for e in events)


def _req_pod(name: str, requests: dict[str, str], node_name: str = "", uid: str = "") -> dict:
    return pod(requests, name=name, node=node_name, uid=uid or f"uid-{name}")


@pytest.mark.parametrize(
    ("target", "old", "new", "in_place", "want"),
    [
        (pod(), "not-a-pod", None, True, QueueingHint.QUEUE),
        (pod(), None, "not-a-pod", True, QueueingHint.QUEUE),
        (_req_pod("pod1", {"cpu": "1"}), _req_pod("pod2", {"cpu": "1"}, "fake"), None, True, QueueingHint.QUEUE),
        (pod(), pod(), None, True, QueueingHint.SKIP),
        (_req_pod("pod1", {"cpu": "1"}), _req_pod("pod2", {"cpu": "2"}, "fake"), _req_pod("pod2", {"cpu": "1"}, "fake"),
         False, QueueingHint.SKIP),
        (_req_pod("pod1", {"cpu": "1"}, uid="uid0"), _req_pod("pod2", {"cpu": "2"}, uid="uid1"),
         _req_pod("pod2", {"cpu": "1"}, uid="uid1"), True, QueueingHint.SKIP),
        (_req_pod("pod1", {"cpu": "1"}), _req_pod("pod2", {"memory": "2"}, "fake"),
         _req_pod("pod2", {"memory": "1"}, "fake"), True, QueueingHint.SKIP),
        (_req_pod("pod1", {"cpu": "1"}), _req_pod("pod2", {"cpu": "2"}, "fake"), _req_pod("pod2", {"cpu": "1"}, "fake"),
         True, QueueingHint.QUEUE),
        (_req_pod("pod1", {"cpu": "1"}), _req_pod("pod1", {"cpu": "2"}), _req_pod("pod1", {"cpu": "1"}), True,
         QueueingHint.QUEUE),
    ],
    ids=[
        "backoff-wrong-old-object",
        "backoff-wrong-new-object",
        "queue-on-other-pod-deleted",
        "skip-queue-on-unscheduled-pod-deleted",
        "skip-queue-on-disable-inplace-pod-vertical-scaling",
        "skip-queue-on-other-unscheduled-pod",
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        "queue-on-other-pod-some-resource-scale-down",
        "queue-on-target-pod-some-resource-scale-down",
    ],
)  # fmt: skip
def test_is_schedulable_after_pod_event(target, old, new, in_place, want):
    p = NodeResourcesFit.new(None, handle(InPlacePodVerticalScaling=in_place))
    assert p.is_schedulable_after_pod_event(target, old, new) == want


def test_scale_down_hint_reads_resized_status_and_pod_level_requests():
    # With InPlacePodVerticalScaling the hint reads requests as upstream's isSchedulableAfterPodScaleDown does:
    # a container's status counts, and pod-level requests count whatever PodLevelResources says.
    p = NodeResourcesFit.new(None, handle(InPlacePodVerticalScaling=True))
    target = pod({"cpu": "1"}, name="pod1", uid="uid-pod1")
    resizing = pod({"cpu": "1"}, node="fake", name="pod2", uid="uid-pod2", status_requests={"c0": {"cpu": "2"}})
    resized = pod({"cpu": "1"}, node="fake", name="pod2", uid="uid-pod2", status_requests={"c0": {"cpu": "1"}})
    assert p.is_schedulable_after_pod_event(target, resizing, resized) == QueueingHint.QUEUE
    assert p.is_schedulable_after_pod_event(target, resized, resizing) == QueueingHint.SKIP
    pod_level_target = pod({}, name="pod1", uid="uid-pod1", pod_requests={"cpu": "1"})
    shrunk = pod({"cpu": "1"}, node="fake", name="pod2", uid="uid-pod2")
    assert p.is_schedulable_after_pod_event(pod_level_target, resizing, shrunk) == QueueingHint.QUEUE


@pytest.mark.parametrize(("gate", "want"), [(True, QueueingHint.SKIP), (False, QueueingHint.QUEUE)])
def test_node_change_hint_counts_pod_level_requests_with_the_gate(gate, want):
    the_pod = pod({"cpu": "1m"}, pod_requests={"cpu": "2"})
    p = NodeResourcesFit.new(None, handle(PodLevelResources=gate))
    assert p.is_schedulable_after_node_change(the_pod, None, cap_node("n", {"cpu": "1500m"})) == want
    grown = p.is_schedulable_after_node_change(the_pod, cap_node("n", {"cpu": "1"}), cap_node("n", {"cpu": "3"}))
    assert grown == QueueingHint.QUEUE


MEM2_EXT1 = res(memory=2, scalars={EXT_A: 1})


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        (pod(), None, "not-a-node", QueueingHint.QUEUE),
        (pod(), "not-a-node", node("n"), QueueingHint.QUEUE),
        (pod(res(memory=2)), None, cap_node("n", {"memory": "1"}), QueueingHint.SKIP),
        (pod(res(scalars={EXT_A: 1})), None, cap_node("n", {EXT_B: "1"}), QueueingHint.SKIP),
        (pod(MEM2_EXT1), None, cap_node("n", {"memory": "4", EXT_A: "2"}), QueueingHint.QUEUE),
        (pod(MEM2_EXT1), cap_node("n", {"memory": "2", EXT_A: "2"}),
         cap_node("n", {"memory": "2", EXT_A: "1", EXT_B: "2"}), QueueingHint.SKIP),
        (pod(MEM2_EXT1), cap_node("n", {"memory": "2", EXT_A: "1"}), cap_node("n", {"memory": "2", EXT_A: "2"}),
         QueueingHint.QUEUE),
        (pod(MEM2_EXT1), cap_node("n", {"memory": "4", EXT_A: "2"}), cap_node("n", {"memory": "1", EXT_A: "2"}),
         QueueingHint.SKIP),
        (pod(MEM2_EXT1), cap_node("n", {"memory": "1", EXT_A: "2"}), cap_node("n", {"memory": "4", EXT_A: "2"}),
         QueueingHint.QUEUE),
    ],
    ids=[
        "backoff-wrong-new-object",
        "backoff-wrong-old-object",
        "skip-queue-on-node-add-without-sufficient-resources",
        "skip-queue-on-node-add-without-required-resource-type",
        "queue-on-node-add-with-sufficient-resources",
        "skip-queue-on-node-unrelated-changes",
        "queue-on-pod-requested-resources-increase",
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        "queue-on-node-changes-from-unsuitable-to-suitable",
    ],
)  # fmt: skip
def test_is_schedulable_after_node_change(target, old, new, want):
    p = NodeResourcesFit.new(None, handle())
    assert p.is_schedulable_after_node_change(target, old, new) == want


@pytest.mark.parametrize(
    ("the_pod", "the_node", "want"),
    [
        (pod(), None, False),
        (pod({"cpu": "2"}), cap_node("n", {"cpu": "1"}), False),
        (pod({"cpu": "1"}), cap_node("n", {"cpu": "2"}), True),
    ],
    ids=["nil node", "insufficient resource", "sufficient resource"],
)
def test_is_fit(the_pod, the_node, want):
    assert is_fit(the_pod, the_node) == want


_ALL1 = {"pods": "1", "cpu": "1", "memory": "1", "ephemeral-storage": "1", EXT_A: "1"}
_BASE = {"cpu": "1", "memory": "2", "ephemeral-storage": "3", EXT_A: "4"}
_FULL_POD = res(2, 2, eph=2, scalars={EXT_A: 2})


@pytest.mark.parametrize(
    ("the_pod", "original", "modified", "want"),
    [
        (pod(res()), _ALL1, {"pods": "1", "cpu": "2", "memory": "2", "ephemeral-storage": "2", EXT_A: "2"}, False),
        (pod(res()), _ALL1, {**_ALL1, "pods": "2"}, True),
        (pod(_FULL_POD), _BASE, {"cpu": "1", "memory": "2", "ephemeral-storage": "1", EXT_A: "1"}, False),
        (pod(_FULL_POD), _BASE, {"cpu": "3", "memory": "4", "ephemeral-storage": "3", EXT_A: "4"}, True),
        (pod(res(2, 2)), _BASE, {"cpu": "1", "memory": "2", "ephemeral-storage": "1", EXT_A: "1"}, False),
        (pod(res(2, 2)), _BASE, {"cpu": "1", "memory": "2", "ephemeral-storage": "5", EXT_A: "6"}, False),
    ],
    ids=[
        "no-requested-resources",
        "no-requested-resources-pods-increased",
        "requested-resources-decreased",
        "requested-resources-increased",
        "non-requested-resources-decreased",
        "non-requested-resources-increased",
    ],
)
def test_have_any_requested_resources_increased(the_pod, original, modified, want):
    got = have_any_requested_resources_increased(the_pod, cap_node("n", original), cap_node("n", modified))
    assert got == want


# -- args ----------------------------------------------------------------------------------------------------------


def test_default_args():
    p = NodeResourcesFit.new(None, handle())
    assert p.args.strategy == "LeastAllocated"
    assert [(r.name, r.weight) for r in p.args.resources] == [("cpu", 1), ("memory", 1)]
    # a strategy without resources gets the defaults, and weights left out (or 0) become 1
    p = NodeResourcesFit.new({"scoringStrategy": {"type": "MostAllocated"}}, handle())
    assert [(r.name, r.weight) for r in p.args.resources] == [("cpu", 1), ("memory", 1)]
    p = NodeResourcesFit.new(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}]}},
        handle(),
    )
    assert [(r.name, r.weight) for r in p.args.resources] == [("cpu", 1), ("memory", 1)]
    b = NodeResourcesBalancedAllocation.new({}, handle())
    assert [(r.name, r.weight) for r in b.args.resources] == [("cpu", 1), ("memory", 1)]


RTCR = "RequestedToCapacityRatio"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]}},
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}]}},
            "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Foo"}},
            'scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {"ignoredResources": ["example.com/ok", "bad name"]},
            "ignoredResources[1]: Invalid value: \"bad name\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {"ignoredResourceGroups": ["example.com/aaa"]},
            "ignoredResourceGroups[0]: Invalid value: \"example.com/aaa\": resource group name can't contain '/'",
        ),
        (
            {"scoringStrategy": {"type": RTCR, "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.shape: Required value: at least one point must be specified",
        ),
        (
            {"scoringStrategy": {"type": RTCR, "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]}}},
            "scoringStrategy.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
        ),
        (
            {"scoringStrategy": {"type": RTCR, "requestedToCapacityRatio": {"shape": [{"utilization": -1, "score": 11}]}}},
            "[scoringStrategy.shape[0].utilization: Invalid value: -1: not in valid range [0, 100], scoringStrategy.shape[0].score: Invalid value: 11: not in valid range [0, 10]]",
        ),
        (
            {"scoringStrategy": {"type": RTCR}},
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio",
        ),
    ],
    ids=[
        "negative weight",
        "weight over 100",
        "unknown strategy",
        "invalid ignored resource",
        "resource group with slash",
        "empty shape",
        "unsorted shape",
        "shape out of range",
        "ratio strategy without shape",
    ],
)  # fmt: skip
def test_invalid_fit_args(args, message):
    with pytest.raises(ValueError) as e:
        NodeResourcesFit.new(args, handle())
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight: Invalid value: 2: must be 1"),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            'resources[1].name: Duplicate value: "cpu"',
        ),
        (
            {"resources": [{"name": "cpu", "weight": 3}, {"name": "cpu", "weight": 1}]},
            '[resources[0].weight: Invalid value: 3: must be 1, resources[1].name: Duplicate value: "cpu"]',
        ),
    ],
    ids=["weight not 1", "duplicate", "both"],
)
def test_invalid_balanced_allocation_args(args, message):
    with pytest.raises(ValueError) as e:
        NodeResourcesBalancedAllocation.new(args, handle())
    assert str(e.value) == message
