"""privileged (baseline; upstream: policy/check_privileged.go): no privileged containers."""

from __future__ import annotations

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, name_of, named, security_context


def privileged_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad = [name_of(c) for c in containers(spec) if (sc := security_context(c)) and sc.get("privileged") is True]
    if bad:
        return CheckResult(
            False, "privileged", f"{named('container', 'containers', bad)} must not set securityContext.privileged=true"
        )
    return ALLOWED


CHECK = Check("privileged", BASELINE, (VersionedCheck(0, privileged_1_0),))
