"""hostPorts (baseline; upstream: policy/check_hostPorts.go): no container port may be bound to the host."""

from __future__ import annotations

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, name_of, named, pluralize


def host_ports_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad: list[str] = []
    ports: set[str] = set()
    for c in containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or () if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(name_of(c))
            ports.update(used)
    if bad:
        return CheckResult(
            False,
            "hostPort",
            f"{named('container', 'containers', bad)} {pluralize('uses', 'use', len(bad))} "
            f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
        )
    return ALLOWED


CHECK = Check("hostPorts", BASELINE, (VersionedCheck(0, host_ports_1_0),))
