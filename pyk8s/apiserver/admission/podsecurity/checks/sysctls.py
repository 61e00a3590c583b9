"""sysctls (baseline; upstream: policy/check_sysctls.go): only the namespaced, isolated "safe" sysctls; the
safe set grew in v1.27, v1.29 and v1.32."""

from __future__ import annotations

from collections.abc import Callable

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import security_context

SYSCTLS_ALLOWED_1_0 = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
})  # fmt: skip
SYSCTLS_ALLOWED_1_27 = SYSCTLS_ALLOWED_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_ALLOWED_1_29 = SYSCTLS_ALLOWED_1_27 | {
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip
SYSCTLS_ALLOWED_1_32 = SYSCTLS_ALLOWED_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def sysctls_check(allowed: frozenset[str]) -> Callable[[PodMeta, PodSpec], CheckResult]:
    def check(meta: PodMeta, spec: PodSpec) -> CheckResult:
        sc = security_context(spec)
        names = [str(s.get("name") or "") for s in (sc or {}).get("sysctls") or () if isinstance(s, dict)]
        forbidden = [n for n in names if n not in allowed]
        if forbidden:
            return CheckResult(False, "forbidden sysctls", ", ".join(forbidden))
        return ALLOWED

    return check


CHECK = Check(
    "sysctls",
    BASELINE,
    (
        VersionedCheck(0, sysctls_check(SYSCTLS_ALLOWED_1_0)),
        VersionedCheck(27, sysctls_check(SYSCTLS_ALLOWED_1_27)),
        VersionedCheck(29, sysctls_check(SYSCTLS_ALLOWED_1_29)),
        VersionedCheck(32, sysctls_check(SYSCTLS_ALLOWED_1_32)),
    ),
)
