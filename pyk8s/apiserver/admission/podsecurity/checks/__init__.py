"""The Pod Security Standards checks, one module per upstream check file (upstream: pod-security-admission/
policy/check_*.go). `DEFAULT_CHECKS` is every check assigned to a policy version, which is all of them in v1.32."""

from __future__ import annotations

from . import (
    allow_privilege_escalation,
    app_armor_profile,
    capabilities,
    host_namespaces,
    host_path_volumes,
    host_ports,
    privileged,
    proc_mount,
    restricted_volumes,
    run_as_non_root,
    run_as_user,
    se_linux_options,
    seccomp_profile,
    sysctls,
    windows_host_process,
)
from .check import (
    ALLOWED,
    AggregateCheckResult,
    Check,
    CheckResult,
    VersionedCheck,
    aggregate_check_results,
)

DEFAULT_CHECKS: tuple[Check, ...] = (
    allow_privilege_escalation.CHECK,
    app_armor_profile.CHECK,
    capabilities.BASELINE_CHECK,
    capabilities.RESTRICTED_CHECK,
    host_namespaces.CHECK,
    host_path_volumes.CHECK,
    host_ports.CHECK,
    privileged.CHECK,
    proc_mount.CHECK,
    restricted_volumes.CHECK,
    run_as_non_root.CHECK,
    run_as_user.CHECK,
    se_linux_options.CHECK,
    seccomp_profile.BASELINE_CHECK,
    seccomp_profile.RESTRICTED_CHECK,
    sysctls.CHECK,
    windows_host_process.CHECK,
)

__all__ = [
    "ALLOWED",
    "DEFAULT_CHECKS",
    "AggregateCheckResult",
    "Check",
    "CheckResult",
    "VersionedCheck",
    "aggregate_check_results",
]
