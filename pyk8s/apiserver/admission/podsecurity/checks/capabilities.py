"""Capabilities (upstream: policy/check_capabilities_baseline.go and check_capabilities_restricted.go).

capabilities_baseline: containers may add only capabilities from the runtime's default set.
capabilities_restricted (replaces it at restricted, from v1.22): containers must drop ALL and may add only
NET_BIND_SERVICE; from v1.25 a windows pod is exempt.
"""

from __future__ import annotations

from typing import Any

from ..api import BASELINE, RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, is_windows, join_quote, name_of, named, security_context, sub

CAPABILITIES_BASELINE_ID = "capabilities_baseline"

CAPABILITIES_ALLOWED_1_0 = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})  # fmt: skip

CAPABILITY_ALL = "ALL"
CAPABILITY_NET_BIND_SERVICE = "NET_BIND_SERVICE"


def _capabilities(c: dict[str, Any]) -> dict[str, Any] | None:
    return sub(security_context(c), "capabilities")


def capabilities_baseline_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad: list[str] = []
    non_default: set[str] = set()
    for c in containers(spec):
        caps = _capabilities(c)
        if caps is None:
            continue
        extra = [str(cap) for cap in caps.get("add") or () if cap not in CAPABILITIES_ALLOWED_1_0]
        if extra:
            bad.append(name_of(c))
            non_default.update(extra)
    if bad:
        return CheckResult(
            False,
            "non-default capabilities",
            f"{named('container', 'containers', bad)} must not include {join_quote(sorted(non_default))} "
            "in securityContext.capabilities.add",
        )
    return ALLOWED


def capabilities_restricted_1_22(meta: PodMeta, spec: PodSpec) -> CheckResult:
    missing_drop_all: list[str] = []
    adding_forbidden: list[str] = []
    forbidden: set[str] = set()
    for c in containers(spec):
        caps = _capabilities(c)
        if caps is None:
            missing_drop_all.append(name_of(c))
            continue
        if CAPABILITY_ALL not in (caps.get("drop") or ()):
            missing_drop_all.append(name_of(c))
        extra = [str(cap) for cap in caps.get("add") or () if cap != CAPABILITY_NET_BIND_SERVICE]
        if extra:
            adding_forbidden.append(name_of(c))
            forbidden.update(extra)
    details: list[str] = []
    if missing_drop_all:
        details.append(
            f'{named("container", "containers", missing_drop_all)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding_forbidden:
        details.append(
            f"{named('container', 'containers', adding_forbidden)} must not include "
            f"{join_quote(sorted(forbidden))} in securityContext.capabilities.add"
        )
    if details:
        return CheckResult(False, "unrestricted capabilities", "; ".join(details))
    return ALLOWED


def capabilities_restricted_1_25(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if is_windows(spec):
        return ALLOWED
    return capabilities_restricted_1_22(meta, spec)


BASELINE_CHECK = Check(CAPABILITIES_BASELINE_ID, BASELINE, (VersionedCheck(0, capabilities_baseline_1_0),))
RESTRICTED_CHECK = Check(
    "capabilities_restricted",
    RESTRICTED,
    (
        VersionedCheck(22, capabilities_restricted_1_22, (CAPABILITIES_BASELINE_ID,)),
        VersionedCheck(25, capabilities_restricted_1_25, (CAPABILITIES_BASELINE_ID,)),
    ),
)
