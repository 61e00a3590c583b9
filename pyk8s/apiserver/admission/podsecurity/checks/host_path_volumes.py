"""hostPathVolumes (baseline; upstream: policy/check_hostPathVolumes.go): no hostPath volumes."""

from __future__ import annotations

from ..api import BASELINE
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import named

HOST_PATH_VOLUMES_ID = "hostPathVolumes"


def host_path_volumes_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad = [
        str(v.get("name") or "")
        for v in spec.get("volumes") or ()
        if isinstance(v, dict) and v.get("hostPath") is not None
    ]
    if bad:
        return CheckResult(False, "hostPath volumes", named("volume", "volumes", bad))
    return ALLOWED


CHECK = Check(HOST_PATH_VOLUMES_ID, BASELINE, (VersionedCheck(0, host_path_volumes_1_0),))
