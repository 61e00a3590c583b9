"""windowsHostProcess (baseline; upstream: policy/check_windowsHostProcess.go): neither the pod nor a container
may set securityContext.windowsOptions.hostProcess=true."""

from __future__ import annotations

from typing import Any

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, name_of, named, security_context, sub


def _host_process(obj: dict[str, Any]) -> bool:
    opts = sub(security_context(obj), "windowsOptions")
    return opts is not None and opts.get("hostProcess") is True


def windows_host_process_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    setters = ["pod"] if _host_process(spec) else []
    bad = [name_of(c) for c in containers(spec) if _host_process(c)]
    if bad:
        setters.append(named("container", "containers", bad))
    if setters:
        return CheckResult(
            False,
            "hostProcess",
            f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
        )
    return ALLOWED


CHECK = Check("windowsHostProcess", BASELINE, (VersionedCheck(0, windows_host_process_1_0),))
