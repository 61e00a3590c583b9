"""runAsUser (restricted, from v1.23; upstream: policy/check_runAsUser.go): neither the pod nor a container
may set runAsUser=0."""

from __future__ import annotations

from typing import Any

from ..api import RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, name_of, named, relax_for_user_namespace, security_context


def _root(obj: dict[str, Any]) -> bool:
    sc = security_context(obj)
    uid = sc.get("runAsUser") if sc is not None else None
    return type(uid) is int and uid == 0


def run_as_user_1_23(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if relax_for_user_namespace(spec):
        return ALLOWED
    setters = ["pod"] if _root(spec) else []
    bad = [name_of(c) for c in containers(spec) if _root(c)]
    if bad:
        setters.append(named("container", "containers", bad))
    if setters:
        return CheckResult(False, "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0")
    return ALLOWED


CHECK = Check("runAsUser", RESTRICTED, (VersionedCheck(23, run_as_user_1_23),))
