"""procMount (baseline; upstream: policy/check_procMount.go): containers keep the Default /proc mask."""

from __future__ import annotations

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, join_quote, name_of, named, relax_for_user_namespace, security_context

DEFAULT_PROC_MOUNT = "Default"


def proc_mount_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if relax_for_user_namespace(spec):
        return ALLOWED
    bad: list[str] = []
    types: set[str] = set()
    for c in containers(spec):
        sc = security_context(c)
        if sc is None or sc.get("procMount") is None:
            continue
        if sc["procMount"] != DEFAULT_PROC_MOUNT:
            bad.append(name_of(c))
            types.add(str(sc["procMount"]))
    if bad:
        return CheckResult(
            False,
            "procMount",
            f"{named('container', 'containers', bad)} must not set securityContext.procMount to "
            f"{join_quote(sorted(types))}",
        )
    return ALLOWED


CHECK = Check("procMount", BASELINE, (VersionedCheck(0, proc_mount_1_0),))
