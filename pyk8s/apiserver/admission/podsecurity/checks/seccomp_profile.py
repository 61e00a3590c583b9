"""Seccomp profiles (upstream: policy/check_seccompProfile_baseline.go and check_seccompProfile_restricted.go).

seccompProfile_baseline: a profile that is set must be RuntimeDefault or Localhost (before v1.19, the
deprecated seccomp annotations: runtime/default, docker/default or localhost/*).
seccompProfile_restricted (replaces it at restricted, from v1.19): a profile must also be set, on the pod or
on every container; from v1.25 a windows pod is exempt.
"""

from __future__ import annotations

from typing import Any

from .....api.errors import go_quote
from ..api import BASELINE, RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, is_windows, join_quote, name_of, named, pluralize, security_context, sub

ANNOTATION_KEY_POD = "seccomp.security.alpha.kubernetes.io/pod"
ANNOTATION_KEY_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_BASELINE_ID = "seccompProfile_baseline"

_VALID_TYPES = frozenset({"Localhost", "RuntimeDefault"})


def _valid_annotation_value(v: str) -> bool:
    return v in ("runtime/default", "docker/default") or v.startswith("localhost/")


def _profile(obj: dict[str, Any]) -> dict[str, Any] | None:
    return sub(security_context(obj), "seccompProfile")


def seccomp_profile_baseline_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    annotations = meta.get("annotations") or {}
    forbidden: set[str] = set()
    keys = [ANNOTATION_KEY_POD, *(ANNOTATION_KEY_CONTAINER_PREFIX + name_of(c) for c in containers(spec))]
    for key in keys:
        if key in annotations and not _valid_annotation_value(str(annotations[key])):
            forbidden.add(f"{key}={go_quote(str(annotations[key]))}")
    if forbidden:
        return CheckResult(
            False,
            "seccompProfile",
            f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} {', '.join(sorted(forbidden))}",
        )
    return ALLOWED


def _explicit_setters(spec: PodSpec) -> tuple[list[str], set[str], bool, list[str]]:
    """Who sets a bad type, the bad types, whether the pod sets a good one, and the containers that set none."""
    setters: list[str] = []
    bad_values: set[str] = set()
    pod_set = False
    pod_profile = _profile(spec)
    if pod_profile is not None:
        if pod_profile.get("type") in _VALID_TYPES:
            pod_set = True
        else:
            setters.append("pod")
            bad_values.add(str(pod_profile.get("type") or ""))
    explicitly_bad: list[str] = []
    unset: list[str] = []
    for c in containers(spec):
        profile = _profile(c)
        if profile is None:
            unset.append(name_of(c))
        elif profile.get("type") not in _VALID_TYPES:
            explicitly_bad.append(name_of(c))
            bad_values.add(str(profile.get("type") or ""))
    if explicitly_bad:
        setters.append(named("container", "containers", explicitly_bad))
    return setters, bad_values, pod_set, unset


def _bad_setters(setters: list[str], bad_values: set[str]) -> CheckResult:
    return CheckResult(
        False,
        "seccompProfile",
        f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {join_quote(sorted(bad_values))}",
    )


def seccomp_profile_baseline_1_19(meta: PodMeta, spec: PodSpec) -> CheckResult:
    setters, bad_values, _, _ = _explicit_setters(spec)
    return _bad_setters(setters, bad_values) if setters else ALLOWED


def seccomp_profile_restricted_1_19(meta: PodMeta, spec: PodSpec) -> CheckResult:
    setters, bad_values, pod_set, unset = _explicit_setters(spec)
    if setters:
        return _bad_setters(setters, bad_values)
    if unset and not pod_set:
        return CheckResult(
            False,
            "seccompProfile",
            f"pod or {named('container', 'containers', unset)} must set securityContext.seccompProfile.type to "
            '"RuntimeDefault" or "Localhost"',
        )
    return ALLOWED


def seccomp_profile_restricted_1_25(meta: PodMeta, spec: PodSpec) -> CheckResult:
    if is_windows(spec):
        return ALLOWED
    return seccomp_profile_restricted_1_19(meta, spec)


BASELINE_CHECK = Check(
    SECCOMP_BASELINE_ID,
    BASELINE,
    (VersionedCheck(0, seccomp_profile_baseline_1_0), VersionedCheck(19, seccomp_profile_baseline_1_19)),
)
RESTRICTED_CHECK = Check(
    "seccompProfile_restricted",
    RESTRICTED,
    (
        VersionedCheck(19, seccomp_profile_restricted_1_19, (SECCOMP_BASELINE_ID,)),
        VersionedCheck(25, seccomp_profile_restricted_1_25, (SECCOMP_BASELINE_ID,)),
    ),
)
