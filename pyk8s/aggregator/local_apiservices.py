"""The local APIServices: one for every group version this server serves itself, built-in ones from a fixed
priority table and those of CustomResourceDefinitions at 1000/100 (upstream: kubernetes
pkg/controlplane/apiserver/aggregator.go `apiServicesToRegister`, `makeAPIService`,
`DefaultGenericAPIServicePriorities`, cmd/kube-apiserver/app/aggregator.go `apiVersionPriorities`, and
pkg/controlplane/controller/crdregistration)."""

from __future__ import annotations

from ..api.meta import Object
from ..api.resources import ResourceTable
from . import apiservice as api

# (group, version) -> (groupPriorityMinimum, versionPriority), as kube-apiserver 1.32 has them. A built-in group
# version missing here gets no APIService (upstream: so that it can never shadow a CRD's).
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1beta1"): (16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1"): (16700, 9),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("coordination.k8s.io", "v1alpha2"): (16500, 12),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1beta1"): (16200, 9),
    ("resource.k8s.io", "v1alpha3"): (16200, 1),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3"): (16100, 18),
    ("internal.apiserver.k8s.io", "v1alpha1"): (16000, 9),
    ("storagemigration.k8s.io", "v1alpha1"): (15800, 9),
    # pyk8s serves the resource metrics API itself, where a cluster runs metrics-server behind an APIService;
    # its local APIService has the priorities metrics-server's manifest gives it.
    ("metrics.k8s.io", "v1beta1"): (100, 100),
}
CRD_PRIORITIES = (1000, 100)  # upstream crdregistration: low, and ordered by version name among equals
# The aggregator's own group is listed before every other (upstream: APIRegistrationGroupPriority, above the
# 20000 an APIService may have).
APIREGISTRATION_GROUP_PRIORITY = 20001
# What a group version that nothing else gives a priority sorts with in aggregated discovery (upstream's
# resource manager default).
DEFAULT_PRIORITIES = (1000, 15)


def served_group_versions(table: ResourceTable, custom: bool) -> list[tuple[str, str]]:
    """The group versions of `table`'s resources, built-in ones or those of custom resources."""
    seen: dict[tuple[str, str], None] = {}
    for r in table.resources:
        if r.custom == custom:
            seen[(r.group, r.version)] = None
    return list(seen)


def builtin_apiservices(table: ResourceTable) -> list[Object]:
    """An `onstart` APIService for every built-in group version `table` serves that has priorities."""
    out = []
    for group, version in served_group_versions(table, custom=False):
        priorities = PRIORITIES.get((group, version))
        if priorities is not None:
            out.append(api.make(group, version, *priorities, managed=api.MANAGE_ON_START))
    return out


def crd_apiservices(table: ResourceTable) -> list[Object]:
    """A continuously managed APIService for every group version a CRD serves, unless a built-in one has it."""
    builtin = set(served_group_versions(table, custom=False))
    return [
        api.make(group, version, *CRD_PRIORITIES, managed=api.MANAGE_CONTINUOUSLY)
        for group, version in served_group_versions(table, custom=True)
        if (group, version) not in builtin
    ]


def priorities_of(group: str, version: str, custom: bool) -> tuple[int, int]:
    """A locally served group version's priorities when it has no APIService (aggregated discovery)."""
    if group == api.GROUP:
        return APIREGISTRATION_GROUP_PRIORITY, 0
    if custom:
        return CRD_PRIORITIES
    return PRIORITIES.get((group, version), DEFAULT_PRIORITIES)
