"""Whether a pod's volumes are ready to mount, for the simulated kubelet (upstream: pkg/kubelet/volumemanager,
the desired-state populator and WaitForAttachAndMount): a pod whose PersistentVolumeClaims (named, or made for
its generic ephemeral volumes) are not all Bound to a PersistentVolume that exists does not start; its kubelet
looks again every MOUNT_RETRY seconds. Other volume kinds need nothing from the API and count as mounted at once.

Only pods with claims cost anything here: their claims and volumes are read from the API when the pod is about
to start, not watched, as few pods have them and a process of thousands of nodes should not hold every claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..api import errors
from ..client.rest import RESTClient

MOUNT_RETRY = 2.0  # seconds between looks at a pod's unbound claims (upstream retries its sync on back-off)


def claim_names(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(volume name, claim name) of each volume backed by a claim."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if (v.get("persistentVolumeClaim") or {}).get("claimName"):
            out.append((str(v.get("name")), str(v["persistentVolumeClaim"]["claimName"])))
        elif v.get("ephemeral") is not None:
            out.append((str(v.get("name")), f"{name}-{v.get('name')}"))
    return out


async def unmountable(client: RESTClient, pod: Mapping[str, Any]) -> str | None:
    """Why the pod's claim-backed volumes cannot be mounted yet, or None when they can."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    for volume, claim in claim_names(pod):
        try:
            pvc = await client.get("persistentvolumeclaims", claim, namespace)
        except errors.NotFound:
            return f'volume "{volume}": persistentvolumeclaim "{claim}" not found'
        if (pvc.get("metadata") or {}).get("deletionTimestamp"):
            return f'volume "{volume}": persistentvolumeclaim "{claim}" is being deleted'
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        if not pv_name or (pvc.get("status") or {}).get("phase") != "Bound":
            return f'volume "{volume}": PVC {namespace}/{claim} has non-bound phase ("{(pvc.get("status") or {}).get("phase", "")}") or empty pvc.Spec.VolumeName ("{pv_name or ""}")'
        try:
            await client.get("persistentvolumes", str(pv_name))
        except errors.NotFound:
            return f'volume "{volume}": persistentvolume "{pv_name}" not found'
    return None
