"""restrictedVolumes (restricted; replaces hostPathVolumes there; upstream: policy/check_restrictedVolumes.go):
only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected and secret volumes."""

from __future__ import annotations

from ..api import RESTRICTED
from .check import ALLOWED, Check, CheckResult, PodMeta, PodSpec, VersionedCheck
from .helpers import join_quote, named, pluralize
from .host_path_volumes import HOST_PATH_VOLUMES_ID

ALLOWED_VOLUME_SOURCES = (
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
)  # fmt: skip

# The sources named in the detail, in the order upstream tests them; any other is "unknown".
RESTRICTED_VOLUME_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos",
)  # fmt: skip


def restricted_volumes_1_0(meta: PodMeta, spec: PodSpec) -> CheckResult:
    bad: list[str] = []
    types: set[str] = set()
    for v in spec.get("volumes") or ():
        if not isinstance(v, dict):
            continue
        if any(v.get(k) is not None for k in ALLOWED_VOLUME_SOURCES):
            continue
        bad.append(str(v.get("name") or ""))
        types.add(next((k for k in RESTRICTED_VOLUME_SOURCES if v.get(k) is not None), "unknown"))
    if bad:
        return CheckResult(
            False,
            "restricted volume types",
            f"{named('volume', 'volumes', bad)} {pluralize('uses', 'use', len(bad))} "
            f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
            f"{join_quote(sorted(types))}",
        )
    return ALLOWED


CHECK = Check("restrictedVolumes", RESTRICTED, (VersionedCheck(0, restricted_volumes_1_0, (HOST_PATH_VOLUMES_ID,)),))
