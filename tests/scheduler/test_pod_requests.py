"""What a pod asks for under the PodLevelResources and InPlacePodVerticalScaling gates (cases re-expressed from
upstream's component-helpers/resource helpers_test.go TestPodLevelResourceRequests and scheduler
framework/types_test.go TestPodInfoCalculateResources and TestCalculatePodResourcesWithResize, v1.32): the
requests themselves, what NodeInfo counts for a pod on a node, and what the scorers count for the pod."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.scheduler.evaluate import evaluate
from pyk8s.scheduler.framework.features import process_gates, process_gates_set
from pyk8s.scheduler.framework.types import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NO_GATES,
    NodeInfo,
    RequestOptions,
    Resource,
    pod_requests_pair,
)
from tests.scheduler.test_noderesources_support import node, pod
from tests.scheduler.wrappers import make_node, make_pod

MI = 1 << 20
POD_LEVEL = RequestOptions(pod_level=True)
STATUS = RequestOptions(status_resources=True)


def _r(milli_cpu: int = 0, memory: int = 0, eph: int = 0) -> Resource:
    return Resource(milli_cpu=milli_cpu, memory=memory, ephemeral_storage=eph)


def _req(cpu: str | None = None, memory: str | None = None, **more: str) -> dict[str, str]:
    out = dict(more)
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    return out


APP_3MI_2M = _req("2m", "3Mi")
INIT_5MI_4M = _req("4m", "5Mi")
INIT_6MI_8M = _req("8m", "6Mi")


def _sidecar_then_init(the_pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with its sidecars started before its plain init containers (the builder puts them after)."""
    inits = the_pod["spec"]["initContainers"]
    the_pod["spec"]["initContainers"] = [c for c in inits if c.get("restartPolicy")] + [
        c for c in inits if not c.get("restartPolicy")
    ]
    return the_pod


# (name, pod, options, want requests) — upstream's PodRequests
POD_REQUESTS_CASES = [
    ("nil", pod(), POD_LEVEL, _r()),
    ("pod-level memory, gate off", pod(pod_requests={"memory": "2Mi"}), NO_GATES, _r()),
    ("pod-level memory, gate on", pod(pod_requests={"memory": "2Mi"}), POD_LEVEL, _r(memory=2 * MI)),
    ("pod-level memory and container cpu", pod(_req("2m"), pod_requests={"memory": "2Mi"}), POD_LEVEL,
     _r(2, 2 * MI)),
    ("unsupported resource at both levels: the containers' counts",
     pod(_req(**{"ephemeral-storage": "3Mi"}), pod_requests={"ephemeral-storage": "2Mi"}), POD_LEVEL, _r(eph=3 * MI)),
    ("unsupported resource at pod level only", pod(_req(memory="3Mi"), pod_requests={"ephemeral-storage": "2Mi"}),
     POD_LEVEL, _r(memory=3 * MI)),
    ("only container-level resources", pod(APP_3MI_2M), POD_LEVEL, _r(2, 3 * MI)),
    ("both levels: the pod's", pod(APP_3MI_2M, pod_requests={"memory": "6Mi", "cpu": "8m"}), POD_LEVEL,
     _r(8, 6 * MI)),
    ("containers and an init container", pod(APP_3MI_2M, init=[INIT_5MI_4M]), POD_LEVEL, _r(4, 5 * MI)),
    ("containers and an init container, gate off", pod(APP_3MI_2M, init=[INIT_5MI_4M]), NO_GATES, _r(4, 5 * MI)),
    ("containers and a sidecar", pod(APP_3MI_2M, sidecars=[INIT_5MI_4M]), POD_LEVEL, _r(6, 8 * MI)),
    ("containers, a sidecar and an init container",
     _sidecar_then_init(pod(APP_3MI_2M, init=[INIT_6MI_8M], sidecars=[INIT_5MI_4M])), POD_LEVEL, _r(12, 11 * MI)),
    ("pod-level over containers, sidecar and init container",
     _sidecar_then_init(pod(APP_3MI_2M, init=[INIT_6MI_8M], sidecars=[INIT_5MI_4M],
                            pod_requests={"memory": "15Mi", "cpu": "18m"})), POD_LEVEL, _r(18, 15 * MI)),
    ("the overhead adds to the pod-level requests",
     pod(APP_3MI_2M, pod_requests={"cpu": "1"}, overhead={"cpu": "250m", "memory": "1Mi"}), POD_LEVEL,
     _r(1250, 4 * MI)),
    ("pod-level requests of zero still replace the containers'", pod(APP_3MI_2M, pod_requests={"cpu": "0"}),
     POD_LEVEL, _r(0, 3 * MI)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "the_pod", "opts", "want"), POD_REQUESTS_CASES, ids=[c[0] for c in POD_REQUESTS_CASES]
)
def test_pod_requests(name: str, the_pod: dict[str, Any], opts: RequestOptions, want: Resource) -> None:
    assert pod_requests_pair(the_pod, opts)[0] == want
    assert pod_requests_pair(the_pod, opts, defaults_everywhere=True)[0] == want


C500, M500, C700, M800 = "500m", "500Mi", "700m", "800Mi"
C1200, M1200 = "1200m", "1200Mi"
EPH_500, EPH_800 = {"ephemeral-storage": "500Mi"}, {"ephemeral-storage": "800Mi"}

# (name, pod, gates, want requested, want non-zero cpu, want non-zero memory) — what NodeInfo counts
NODE_INFO_CASES = [
    ("requestless container", pod({}), {}, _r(), DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
    ("a container with requests", pod(_req(C500, M500)), {}, _r(500, 500 * MI), 500, 500 * MI),
    ("two containers with requests", pod(_req(C500, M500), _req(C700, M800)), {}, _r(1200, 1300 * MI), 1200,
     1300 * MI),
    ("container and init container with pod-level requests",
     pod(_req(C500, M500), init=[_req(C500, M500)], pod_requests={"cpu": C1200, "memory": M1200}),
     {"PodLevelResources": True}, _r(1200, 1200 * MI), 1200, 1200 * MI),
    ("container and sidecar with pod-level requests",
     pod(_req(C500, M500), sidecars=[_req(C500, M500)], pod_requests={"cpu": C1200, "memory": M1200}),
     {"PodLevelResources": True}, _r(1200, 1200 * MI), 1200, 1200 * MI),
    ("pod-level requests ignored with the gate off",
     pod(_req(C500, M500), sidecars=[_req(C500, M500)], pod_requests={"cpu": C1200, "memory": M1200}),
     {}, _r(1000, 1000 * MI), 1000, 1000 * MI),
    ("pod-level memory only", pod({}, init=[{}], pod_requests={"memory": M1200}), {"PodLevelResources": True},
     _r(memory=1200 * MI), DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
    ("pod-level cpu only", pod({}, init=[{}], pod_requests={"cpu": C500}), {"PodLevelResources": True},
     _r(500), 500, DEFAULT_MEMORY_REQUEST),
    ("unsupported resources in containers, pod-level cpu", pod(EPH_800, init=[EPH_500], pod_requests={"cpu": C500}),
     {"PodLevelResources": True}, _r(500, eph=800 * MI), 500, DEFAULT_MEMORY_REQUEST),
    # With pod-level requests, the memory default is left out as soon as any container names memory.
    ("pod-level cpu, one container naming memory", pod(_req(memory="100Mi"), {}, pod_requests={"cpu": "1"}),
     {"PodLevelResources": True}, _r(1000, 100 * MI), 1000, 100 * MI),
    ("pod-level cpu, no container naming memory", pod({}, {}, pod_requests={"cpu": "1"}),
     {"PodLevelResources": True}, _r(1000), 1000, 2 * DEFAULT_MEMORY_REQUEST),
    ("the overhead names cpu, so no container gets the cpu default",
     pod({}, overhead={"cpu": "100m"}, pod_requests={"memory": "1Mi"}), {"PodLevelResources": True},
     _r(100, MI), 100, MI),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "the_pod", "gates", "want", "nz_cpu", "nz_mem"), NODE_INFO_CASES, ids=[c[0] for c in NODE_INFO_CASES]
)
def test_node_info_counts(
    name: str, the_pod: dict[str, Any], gates: dict[str, bool], want: Resource, nz_cpu: int, nz_mem: int
) -> None:
    with process_gates_set(gates):
        ni = NodeInfo(node("n", {"cpu": "100", "memory": "100Gi"}), [the_pod])
    assert ni.requested == want
    assert (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory) == (nz_cpu, nz_mem)


# (name, pod, want requests, want scoring non-zero cpu/memory) — PodLevelResources on; the scorers give every
# container without a cpu/memory request the default before the pod-level values replace the sum
SCORING_CASES = [
    ("pod-level cpu, one container naming memory", pod(_req(memory="100Mi"), {}, pod_requests={"cpu": "1"}),
     _r(1000, 100 * MI), 1000, 100 * MI + DEFAULT_MEMORY_REQUEST),
    ("pod-level cpu and memory", pod(_req(memory="100Mi"), {}, pod_requests={"cpu": "1", "memory": "1Gi"}),
     _r(1000, 1024 * MI), 1000, 1024 * MI),
    ("no pod-level requests", pod(_req(memory="100Mi"), {}), _r(0, 100 * MI), 2 * DEFAULT_MILLI_CPU_REQUEST,
     100 * MI + DEFAULT_MEMORY_REQUEST),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "the_pod", "want", "nz_cpu", "nz_mem"), SCORING_CASES, ids=[c[0] for c in SCORING_CASES]
)
def test_scoring_defaults(name: str, the_pod: dict[str, Any], want: Resource, nz_cpu: int, nz_mem: int) -> None:
    plain, nz = pod_requests_pair(the_pod, POD_LEVEL, defaults_everywhere=True)
    assert plain == want
    assert (nz.milli_cpu, nz.memory) == (nz_cpu, nz_mem)


def _resized(spec: dict[str, str], status: dict[str, str] | None, resize: str = "") -> dict[str, Any]:
    return pod(spec, status_requests={"c0": status}, resize=resize)


# (name, pod, options, want requests, want non-zero cpu/memory) — a running pod being resized in place
RESIZE_CASES = [
    ("no pending resize", _resized(_req(C500, M500), _req(C500, M500)), STATUS, _r(500, 500 * MI), 500, 500 * MI),
    ("resize in progress", _resized(_req(C500, M500), _req(C500, M500), "InProgress"), STATUS, _r(500, 500 * MI), 500,
     500 * MI),
    ("deferred resize: the larger spec", _resized(_req(C700, M800), _req(C500, M500), "Deferred"), STATUS,
     _r(700, 800 * MI), 700, 800 * MI),
    ("infeasible resize: the status", _resized(_req(C700, M800), _req(C500, M500), "Infeasible"), STATUS,
     _r(500, 500 * MI), 500, 500 * MI),
    ("shrinking: the larger status", _resized(_req(C500, M500), _req(C700, M500), "InProgress"), STATUS,
     _r(700, 500 * MI), 700, 500 * MI),
    ("a resource only the status names", _resized(_req(C500), _req(C500, M500)), STATUS, _r(500, 500 * MI), 500,
     500 * MI),
    ("infeasible, the status names no memory", _resized(_req(C700, M800), _req(C500), "Infeasible"), STATUS,
     _r(500), 500, DEFAULT_MEMORY_REQUEST),
    ("a status without resources", _resized(_req(C500, M500), None), STATUS, _r(500, 500 * MI), 500, 500 * MI),
    ("gate off: the spec", _resized(_req(C700, M800), _req(C500, M500), "Infeasible"), NO_GATES, _r(700, 800 * MI),
     700, 800 * MI),
    ("a status for another container", pod(_req(C500, M500), status_requests={"other": _req(C700)}), STATUS,
     _r(500, 500 * MI), 500, 500 * MI),
    ("init containers keep their spec", pod(_req(C500), init=[_req("2")], status_requests={"i0": _req("3")}), STATUS,
     _r(2000), 2000, DEFAULT_MEMORY_REQUEST),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "the_pod", "opts", "want", "nz_cpu", "nz_mem"), RESIZE_CASES, ids=[c[0] for c in RESIZE_CASES]
)
def test_resized_pod(
    name: str, the_pod: dict[str, Any], opts: RequestOptions, want: Resource, nz_cpu: int, nz_mem: int
) -> None:
    for everywhere in (False, True):  # without pod-level requests the two default rules agree
        plain, nz = pod_requests_pair(the_pod, opts, defaults_everywhere=everywhere)
        assert plain == want
        assert (nz.milli_cpu, nz.memory) == (nz_cpu, nz_mem)
    with process_gates_set({"InPlacePodVerticalScaling": opts.status_resources}):
        ni = NodeInfo(node("n", {"cpu": "100", "memory": "100Gi"}), [the_pod])
    assert ni.requested == want


def test_both_gates_together() -> None:
    # the resized container's requests are summed, then the pod-level cpu replaces the sum
    the_pod = pod(_req(C500, M500), pod_requests={"cpu": "2"}, status_requests={"c0": _req(C700, M800)})
    plain, nz = pod_requests_pair(the_pod, RequestOptions(status_resources=True, pod_level=True))
    assert plain == _r(2000, 800 * MI) and (nz.milli_cpu, nz.memory) == (2000, 800 * MI)


def _scenario(gates: dict[str, bool]) -> dict[str, Any]:
    existing = make_pod("busy", node_name="n1")
    existing["spec"]["resources"] = {"requests": {"cpu": "3"}}
    return {
        "pod": make_pod("web", cpu="2"),
        "nodes": [make_node("n1", cpu="4")],
        "existingPods": [existing],
        "featureGates": gates,
    }


def test_evaluate_counts_existing_pods_with_the_scenario_gates() -> None:
    fit = evaluate(_scenario({"PodLevelResources": True}))["filter"]["NodeResourcesFit"]
    assert fit["n1"] == {"code": "Unschedulable", "reasons": ["Insufficient cpu"]}
    assert evaluate(_scenario({}))["filter"]["NodeResourcesFit"]["n1"]["code"] == "Success"
    assert not process_gates().pod_level_resources  # restored
