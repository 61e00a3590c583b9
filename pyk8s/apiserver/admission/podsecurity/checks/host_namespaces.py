"""hostNamespaces (baseline; upstream: policy/check_hostNamespaces.go): no sharing of the host's network,
PID or IPC namespace."""

from __future__ import annotations

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck


def host_namespaces_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    shared = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    if shared:
        return CheckResult(False, "host namespaces", ", ".join(shared))
    return ALLOWED


CHECK = Check("hostNamespaces", BASELINE, (VersionedCheck(0, host_namespaces_1_0),))
