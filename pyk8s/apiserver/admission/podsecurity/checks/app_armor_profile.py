"""appArmorProfile (baseline; upstream: policy/check_appArmorProfile.go): AppArmor may be left to the
runtime's default or set to RuntimeDefault or a Localhost profile, never Unconfined, in the securityContext
fields or in the deprecated `container.apparmor.security.beta.kubernetes.io/*` annotations."""

from __future__ import annotations

from .....api.errors import go_quote
from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import containers, join_quote, name_of, named, pluralize, security_context, sub

ANNOTATION_KEY_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_ALLOWED_TYPES = frozenset({"RuntimeDefault", "Localhost"})


def _allowed_annotation_value(profile: str) -> bool:
    return not profile or profile == "runtime/default" or profile.startswith("localhost/")


def app_armor_profile_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    setters: list[str] = []
    bad_values: set[str] = set()

    pod_profile = sub(security_context(spec), "appArmorProfile")
    if pod_profile is not None and pod_profile.get("type") not in _ALLOWED_TYPES:
        setters.append("pod")
        bad_values.add(str(pod_profile.get("type") or ""))

    bad_containers: list[str] = []
    for c in containers(spec):
        profile = sub(security_context(c), "appArmorProfile")
        if profile is not None and profile.get("type") not in _ALLOWED_TYPES:
            bad_containers.append(name_of(c))
            bad_values.add(str(profile.get("type") or ""))
    if bad_containers:
        setters.append(named("container", "containers", bad_containers))

    values = sorted(bad_values)
    annotations = meta.get("annotations") or {}
    forbidden = sorted(
        f"{k}={go_quote(str(v))}"
        for k, v in annotations.items()
        if k.startswith(ANNOTATION_KEY_PREFIX) and not _allowed_annotation_value(str(v))
    )
    if forbidden:
        values += forbidden
        setters.append(pluralize("annotation", "annotations", len(forbidden)))

    if setters:
        return CheckResult(
            False,
            pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
            f"{' and '.join(setters)} must not set AppArmor profile type to {join_quote(values)}",
        )
    return ALLOWED


CHECK = Check("appArmorProfile", BASELINE, (VersionedCheck(0, app_armor_profile_1_0),))
