"""seLinuxOptions (baseline; upstream: policy/check_seLinuxOptions.go): SELinux type only one of the container
types (container_engine_t too from v1.31), and no user or role."""

from __future__ import annotations

from typing import Any

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, join_quote, name_of, named, pluralize, security_context, sub

SELINUX_ALLOWED_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_ALLOWED_TYPES_1_31 = SELINUX_ALLOWED_TYPES_1_0 | {"container_engine_t"}


def _se_linux_options(spec: PodSpec, allowed_types: frozenset[str]) -> CheckResult:
    bad_types: set[str] = set()
    set_user = set_role = False

    def valid(opts: dict[str, Any]) -> bool:
        nonlocal set_user, set_role
        ok = True
        kind = str(opts.get("type") or "")
        if kind not in allowed_types:
            ok = False
            bad_types.add(kind)
        if opts.get("user"):
            set_user = True
            ok = False
        if opts.get("role"):
            set_role = True
            ok = False
        return ok

    setters: list[str] = []
    pod_opts = sub(security_context(spec), "seLinuxOptions")
    if pod_opts is not None and not valid(pod_opts):
        setters.append("pod")
    bad: list[str] = []
    for c in containers(spec):
        opts = sub(security_context(c), "seLinuxOptions")
        if opts is not None and not valid(opts):
            bad.append(name_of(c))
    if bad:
        setters.append(named("container", "containers", bad))
    if not setters:
        return ALLOWED
    data: list[str] = []
    if bad_types:
        data.append(f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}")
    if set_user:
        data.append("user may not be set")
    if set_role:
        data.append("role may not be set")
    return CheckResult(
        False,
        "seLinuxOptions",
        f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


def se_linux_options_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    return _se_linux_options(spec, SELINUX_ALLOWED_TYPES_1_0)


def se_linux_options_1_31(meta: PodMeta, spec: PodSpec) -> CheckResult:
    return _se_linux_options(spec, SELINUX_ALLOWED_TYPES_1_31)


CHECK = Check(
    "seLinuxOptions",
    BASELINE,
    (VersionedCheck(0, se_linux_options_1_0), VersionedCheck(31, se_linux_options_1_31)),
)
