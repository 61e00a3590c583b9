"""runAsNonRoot (restricted; upstream: policy/check_runAsNonRoot.go): the pod, or else every container, must
set securityContext.runAsNonRoot=true, and none may set it to false."""

from __future__ import annotations

from ..api import RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, name_of, named, relax_for_user_namespace, security_context


def run_as_non_root_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if relax_for_user_namespace(spec):
        return ALLOWED
    setters: list[str] = []
    pod_non_root = False
    pod_sc = security_context(spec)
    if pod_sc is not None and pod_sc.get("runAsNonRoot") is not None:
        if pod_sc["runAsNonRoot"] is True:
            pod_non_root = True
        else:
            setters.append("pod")

    explicitly_bad: list[str] = []
    implicitly_bad: list[str] = []
    for c in containers(spec):
        sc = security_context(c)
        if sc is not None and sc.get("runAsNonRoot") is not None:
            if sc["runAsNonRoot"] is not True:
                explicitly_bad.append(name_of(c))
        elif not pod_non_root:
            implicitly_bad.append(name_of(c))

    if explicitly_bad:
        setters.append(named("container", "containers", explicitly_bad))
    if setters:
        return CheckResult(
            False, "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
        )
    if implicitly_bad:
        return CheckResult(
            False,
            "runAsNonRoot != true",
            f"pod or {named('container', 'containers', implicitly_bad)} must set securityContext.runAsNonRoot=true",
        )
    return ALLOWED


CHECK = Check("runAsNonRoot", RESTRICTED, (VersionedCheck(0, run_as_non_root_1_0),))
