"""Table-driven and property tests of the arithmetic behind LimitRanger and ResourceQuota (what upstream's unit
tests of limitranger/admission.go, pkg/quota/v1/evaluator/core and resourcequota/controller.go pin down), and
of the CertificateApproval authorization check, without a server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.api.errors import StatusError
from pyk8s.api.quantity import parse_quantity
from pyk8s.api.resources import TABLE
from pyk8s.apiserver.admission import CREATE, UPDATE, Attributes
from pyk8s.apiserver.admission import limit_ranger as lr
from pyk8s.apiserver.admission.certificates import CertificateApproval
from pyk8s.apiserver.admission.errors import object_name
from pyk8s.apiserver.admission.priority import ensure_system_priority_classes
from pyk8s.apiserver.admission.resource_quota import resources as rq
from pyk8s.apiserver.admission.resource_quota.admission import check_request
from pyk8s.apiserver.admission.resource_quota.evaluators import (
    PersistentVolumeClaimEvaluator,
    PodEvaluator,
    Registry,
    ScopeSelector,
    ServiceEvaluator,
    usage_stats,
)
from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import ALLOWED, NO_OPINION_DECISION, Decision
from pyk8s.apiserver.authz import Attributes as AuthzAttributes

Q = parse_quantity


def ql(**values: str) -> dict[str, Any]:
    return {k.replace("_", "."): Q(v) for k, v in values.items()}


def text(rl: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in rl.items()}


def c(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **extra: Any) -> Any:
    return {"name": name, "resources": {"requests": requests or {}, "limits": limits or {}}, **extra}


# -- LimitRanger ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("item", "expected"), [
    ({"type": "Container", "max": {"cpu": "2"}}, {"default": {"cpu": "2"}, "defaultRequest": {"cpu": "2"}}),
    ({"type": "Container", "default": {"cpu": "1"}, "min": {"cpu": "100m", "memory": "1Mi"}},
     {"default": {"cpu": "1"}, "defaultRequest": {"cpu": "1", "memory": "1Mi"}}),
    ({"type": "Container", "defaultRequest": {"cpu": "50m"}, "max": {"cpu": "2"}},
     {"default": {"cpu": "2"}, "defaultRequest": {"cpu": "50m"}}),
    ({"type": "Pod", "max": {"cpu": "2"}}, {}),
])  # fmt: skip
def test_limit_range_item_defaults(item: dict[str, Any], expected: dict[str, Any]) -> None:
    out = lr.default_item(item)
    assert {k: out[k] for k in ("default", "defaultRequest") if k in out} == expected


@pytest.mark.parametrize(("limit", "requests", "limits", "message"), [
    ({"type": "Container", "min": {"cpu": "100m"}}, {"cpu": "50m"}, {},
     "minimum cpu usage per Container is 100m, but request is 50m"),
    ({"type": "Container", "min": {"cpu": "100m"}}, {}, {}, "minimum cpu usage per Container is 100m.  No request is specified"),
    ({"type": "Container", "min": {"cpu": "100m"}}, {"cpu": "200m"}, {"cpu": "50m"},
     "minimum cpu usage per Container is 100m, but limit is 50m"),
    ({"type": "Container", "max": {"memory": "1Gi"}}, {}, {}, "maximum memory usage per Container is 1Gi.  No limit is specified"),
    ({"type": "Container", "max": {"memory": "1Gi"}}, {"memory": "2Gi"}, {"memory": "1Gi"},
     "maximum memory usage per Container is 1Gi, but request is 2Gi"),
    ({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}, {"cpu": "250m"}, {"cpu": "1"},
     "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"),
    ({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}, {"cpu": "500m"}, {"cpu": "1"}, ""),
    ({"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}, {}, {"cpu": "1"},
     "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"),
    ({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "1"}}, {"cpu": "500m"}, {"cpu": "3"},
     "[minimum cpu usage per Container is 1, but request is 500m, maximum cpu usage per Container is 1, but limit is 3]"),
    ({"type": "Pod", "max": {"memory": "1Gi"}}, {"memory": "1Gi"}, {"memory": "2Gi"},
     "maximum memory usage per Pod is 1Gi, but limit is 2Gi"),
])  # fmt: skip
def test_limit_range_validation(limit: dict[str, Any], requests: dict[str, str], limits: dict[str, str],
                                message: str) -> None:  # fmt: skip
    pod = {"spec": {"containers": [c("app", requests, limits)]}}
    assert lr.validate_pod({"spec": {"limits": [limit]}}, pod) == message


def test_limit_range_errors_aggregate_as_upstream() -> None:
    limit = {"type": "Container", "max": {"cpu": "1", "memory": "1Gi"}}
    pod = {"spec": {"containers": [c("a", limits={"cpu": "2", "memory": "2Gi"})]}}
    assert lr.validate_pod({"spec": {"limits": [limit]}}, pod) == (
        "[maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, "
        "but limit is 2Gi]")  # fmt: skip


def test_claims_are_held_to_their_request() -> None:
    limit = {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}
    claim = {"spec": {"resources": {"requests": {"storage": "20Gi"}}}}
    assert lr.validate_claim({"spec": {"limits": [limit]}}, claim) == (
        "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"
    )


def test_pod_resources_with_sidecars_and_init_containers() -> None:
    spec = {"containers": [c("a", {"cpu": "1"}), c("b", {"cpu": "500m"})],
            "initContainers": [c("side", {"cpu": "200m"}, restartPolicy="Always"), c("init", {"cpu": "3"})]}  # fmt: skip
    # app 1.5 + sidecar 200m = 1700m; the init container runs beside the sidecar: 3200m, the larger
    assert text(lr.pod_resources(spec, "requests")) == {"cpu": "3200m"}


@given(st.integers(1, 10_000), st.integers(1, 10_000), st.integers(1, 100))
def test_the_ratio_check_agrees_with_exact_arithmetic(request_milli: int, limit_milli: int, ratio: int) -> None:
    msg = lr.limit_request_ratio_constraint(
        "Container", "cpu", Q(str(ratio)), {"cpu": Q(f"{request_milli}m")}, {"cpu": Q(f"{limit_milli}m")})  # fmt: skip
    assert bool(msg) == (limit_milli > ratio * request_milli)


# -- quota usage ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "status", "expected"), [
    ({"containers": [c("a", {"cpu": "100m", "memory": "1Gi"}, {"cpu": "200m"})]}, {},
     {"count/pods": "1", "pods": "1", "cpu": "100m", "requests.cpu": "100m", "limits.cpu": "200m", "memory": "1Gi",
      "requests.memory": "1Gi"}),
    ({"containers": [c("a", {"hugepages-2Mi": "4Mi", "example.com/gpu": "1"})]}, {},
     {"count/pods": "1", "pods": "1", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi",
      "requests.example.com/gpu": "1"}),
    ({"containers": [c("a", {"cpu": "1"}, {"cpu": "1"})], "overhead": {"cpu": "250m"}}, {},
     {"count/pods": "1", "pods": "1", "cpu": "1250m", "requests.cpu": "1250m", "limits.cpu": "1250m"}),
    ({"containers": [c("a", {"cpu": "1"})]}, {"phase": "Succeeded"}, {"count/pods": "1"}),
])  # fmt: skip
def test_pod_usage(spec: dict[str, Any], status: dict[str, Any], expected: dict[str, str]) -> None:
    assert text(PodEvaluator().usage({"metadata": {}, "spec": spec, "status": status})) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    ({"type": "ClusterIP", "ports": [{"port": 80}]}, {"count/services": "1", "services": "1"}),
    ({"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]},
     {"count/services": "1", "services": "1", "services.nodeports": "2"}),
    ({"type": "LoadBalancer", "ports": [{"port": 80}]},
     {"count/services": "1", "services": "1", "services.nodeports": "1", "services.loadbalancers": "1"}),
    ({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": False, "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]},
     {"count/services": "1", "services": "1", "services.nodeports": "1", "services.loadbalancers": "1"}),
])  # fmt: skip
def test_service_usage(spec: dict[str, Any], expected: dict[str, str]) -> None:
    assert text(ServiceEvaluator().usage({"spec": spec})) == expected


def test_claim_usage_by_storage_class() -> None:
    claim = {"metadata": {}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1.5"}}},
             "status": {"allocatedResources": {"storage": "1Gi"}}}  # fmt: skip
    assert text(PersistentVolumeClaimEvaluator().usage(claim)) == {
        "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "requests.storage": "1Gi",
        "fast.storageclass.storage.k8s.io/requests.storage": "1Gi"}  # fmt: skip


@pytest.mark.parametrize(("scope", "pod_spec", "matches"), [
    (ScopeSelector("Terminating"), {"activeDeadlineSeconds": 30}, True),
    (ScopeSelector("NotTerminating"), {"activeDeadlineSeconds": 30}, False),
    (ScopeSelector("BestEffort"), {"containers": [c("a")]}, True),
    (ScopeSelector("NotBestEffort"), {"containers": [c("a", {"cpu": "1"})]}, True),
    (ScopeSelector("PriorityClass", "In", ("high",)), {"priorityClassName": "high"}, True),
    (ScopeSelector("PriorityClass", "NotIn", ("high",)), {"priorityClassName": "low"}, True),
    (ScopeSelector("PriorityClass"), {}, False),
    (ScopeSelector("CrossNamespacePodAffinity"),
     {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"namespaces": ["x"]}]}}}, True),
])  # fmt: skip
def test_pod_scopes(scope: ScopeSelector, pod_spec: dict[str, Any], matches: bool) -> None:
    assert PodEvaluator().matches_scope(scope, {"spec": pod_spec}) is matches


def test_usage_stats_only_counts_pods_in_scope() -> None:
    quota = {"spec": {"scopes": ["NotBestEffort"]}}
    pods = [{"metadata": {}, "spec": {"containers": [c("a", {"cpu": "1"})]}},
            {"metadata": {}, "spec": {"containers": [c("b")]}}]  # fmt: skip
    names = ["pods", "requests.cpu", "requests.memory"]
    assert text(rq.mask(usage_stats(PodEvaluator(), pods, quota, names), names)) == {
        "pods": "1", "requests.cpu": "1", "requests.memory": "0"}  # fmt: skip


@given(st.lists(st.integers(0, 5000), max_size=8), st.integers(0, 20000))
def test_charging_never_exceeds_hard(millis: list[int], hard_milli: int) -> None:
    """Charging pods one at a time through check_request: the used total never passes hard, and each refusal
    is a pod that would have."""
    resource = TABLE.find("pods")
    assert resource is not None
    quota = {"metadata": {"name": "q", "namespace": "ns", "resourceVersion": "1"},
             "status": {"hard": {"requests.cpu": f"{hard_milli}m"}, "used": {"requests.cpu": "0"}}}  # fmt: skip
    used = 0
    for i, m in enumerate(millis):
        pod = {"metadata": {"name": f"p{i}"}, "spec": {"containers": [c("a", {"cpu": f"{m}m"})]}}
        a = Attributes(CREATE, resource, "", "ns", f"p{i}", pod, None, UserInfo("u"))
        try:
            [quota] = check_request([quota], a, Registry().get("", "pods"))
            used += m
        except StatusError as err:
            assert used + m > hard_milli and "exceeded quota: q" in err.message
        assert Q(quota["status"]["used"]["requests.cpu"]) == Q(f"{used}m") <= Q(f"{hard_milli}m")


def test_quota_messages() -> None:
    resource = TABLE.find("pods")
    assert resource is not None
    quota = {"metadata": {"name": "compute"},
             "status": {"hard": {"limits.cpu": "2", "pods": "10"}, "used": {"limits.cpu": "1", "pods": "1"}}}  # fmt: skip
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [c("a", limits={"cpu": "2"})]}}
    with pytest.raises(StatusError) as err:
        check_request([quota], Attributes(CREATE, resource, "", "ns", "web", pod, None, UserInfo("u")),
                      PodEvaluator())  # fmt: skip
    assert err.value.message == ('pods "web" is forbidden: exceeded quota: compute, requested: limits.cpu=2, '
                                 "used: limits.cpu=1, limited: limits.cpu=2")  # fmt: skip
    unknown = {"metadata": {"name": "fresh"}, "status": {"hard": {"pods": "1", "cpu": "1"}}}
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    with pytest.raises(StatusError) as err:
        check_request([unknown], Attributes(CREATE, resource, "", "ns", "web", pod, None, UserInfo("u")),
                      PodEvaluator())  # fmt: skip
    assert err.value.message == 'pods "web" is forbidden: status unknown for quota: fresh, resources: cpu,pods'


def test_an_update_is_charged_its_growth_only() -> None:
    resource = TABLE.find("services")
    assert resource is not None
    quota = {"metadata": {"name": "q"}, "status": {"hard": {"services.nodeports": "2"},
                                                   "used": {"services.nodeports": "1"}}}  # fmt: skip
    old = {"metadata": {"name": "s", "resourceVersion": "5"}, "spec": {"type": "NodePort", "ports": [{"port": 1}]}}
    new = {"metadata": {"name": "s", "resourceVersion": "5"},
           "spec": {"type": "NodePort", "ports": [{"port": 1}, {"port": 2}]}}  # fmt: skip
    [charged] = check_request([quota], Attributes(UPDATE, resource, "", "ns", "s", new, old, UserInfo("u")),
                              ServiceEvaluator())  # fmt: skip
    assert charged["status"]["used"] == {"services.nodeports": "2"}


def test_generated_names_print_as_their_prefix() -> None:
    resource = TABLE.find("pods")
    assert resource is not None
    obj = {"metadata": {"name": "web-abcde", "generateName": "web-"}}
    assert object_name(Attributes(CREATE, resource, "", "ns", "web-abcde", obj, None, UserInfo("u"))) == "web-"


def test_rq_helpers() -> None:
    assert rq.less_than_or_equal(ql(cpu="2", memory="1Gi"), ql(cpu="1")) == (False, ["cpu"])
    assert text(rq.subtract_with_non_negative_result(ql(cpu="1"), ql(cpu="2", memory="1"))) == {
        "cpu": "0",
        "memory": "0",
    }
    assert rq.pretty_print(ql(b="1", a="2")) == "a=2,b=1"


# -- certificates ---------------------------------------------------------------------------------------------------


class _Allow:
    def __init__(self, *names: str) -> None:
        self.names = names
        self.asked: list[AuthzAttributes] = []

    def authorize(self, a: AuthzAttributes) -> Decision:
        self.asked.append(a)
        return ALLOWED if a.name in self.names else NO_OPINION_DECISION


@pytest.mark.parametrize(("allowed", "ok"), [
    (("example.com/widgets",), True), (("example.com/*",), True), (("other.com/*",), False), ((), False),
])  # fmt: skip
def test_approval_asks_for_the_signer_then_its_domain(allowed: tuple[str, ...], ok: bool) -> None:
    class Host:
        authorizer = _Allow(*allowed)

    resource = TABLE.find("certificatesigningrequests.certificates.k8s.io")
    assert resource is not None
    csr = {"metadata": {"name": "w"}, "spec": {"signerName": "example.com/widgets"}}
    a = Attributes(UPDATE, resource, "approval", "", "w", csr, csr, UserInfo("jane"))
    if ok:
        asyncio.run(CertificateApproval(Host).validate(a))
    else:
        with pytest.raises(StatusError) as err:
            asyncio.run(CertificateApproval(Host).validate(a))
        assert err.value.message == ('certificatesigningrequests.certificates.k8s.io "w" is forbidden: user not '
                                     'permitted to approve requests with signerName "example.com/widgets"')  # fmt: skip
    first = Host.authorizer.asked[0]
    assert (first.verb, first.api_group, first.resource, first.name, first.api_version) == (
        "approve",
        "certificates.k8s.io",
        "signers",
        "example.com/widgets",
        "*",
    )


def test_system_priority_classes_are_made_once() -> None:
    class Rest:
        def __init__(self) -> None:
            self.made: dict[str, Any] = {}

        async def create(self, namespace: str, obj: dict[str, Any], ctx: Any) -> dict[str, Any]:
            name = obj["metadata"]["name"]
            if name in self.made:
                raise StatusError(409, "AlreadyExists", f'priorityclasses.scheduling.k8s.io "{name}" already exists')
            self.made[name] = obj
            return obj

    rest = Rest()
    asyncio.run(ensure_system_priority_classes(rest, None))
    asyncio.run(ensure_system_priority_classes(rest, None))
    assert {n: o["value"] for n, o in rest.made.items()} == {
        "system-node-critical": 2000001000, "system-cluster-critical": 2000000000}  # fmt: skip
