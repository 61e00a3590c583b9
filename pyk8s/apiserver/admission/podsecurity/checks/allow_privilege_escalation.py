"""allowPrivilegeEscalation (restricted; upstream: policy/check_allowPrivilegeEscalation.go): every container
must set securityContext.allowPrivilegeEscalation=false. From v1.25 a pod with spec.os.name=windows is exempt,
as the field cannot be set for it."""

from __future__ import annotations

from ..api import RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, is_windows, name_of, named, security_context


def allow_privilege_escalation_1_8(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad = [
        name_of(c)
        for c in containers(spec)
        if (sc := security_context(c)) is None or sc.get("allowPrivilegeEscalation") is not False
    ]
    if bad:
        return CheckResult(
            False,
            "allowPrivilegeEscalation != false",
            f"{named('container', 'containers', bad)} must set securityContext.allowPrivilegeEscalation=false",
        )
    return ALLOWED


def allow_privilege_escalation_1_25(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if is_windows(spec):
        return ALLOWED
    return allow_privilege_escalation_1_8(meta, spec)


CHECK = Check(
    "allowPrivilegeEscalation",
    RESTRICTED,
    (VersionedCheck(8, allow_privilege_escalation_1_8), VersionedCheck(25, allow_privilege_escalation_1_25)),
)
