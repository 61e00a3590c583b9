"""ServiceAccount (upstream: plugin/pkg/admission/serviceaccount/admission.go): a new pod runs as a service
account that exists (`default` unless it names one), gets the projected `kube-api-access-<random>` volume with a
bound token, the cluster CA and its namespace mounted at /var/run/secrets/kubernetes.io/serviceaccount in every
container, unless automounting is off, and inherits the account's imagePullSecrets when it has none. Mirror pods
(the kubelet's static pods) may reference no service account and no secret.

The `default` account is made by the serviceaccount controller shortly after its namespace: a pod created in
that moment waits for it (ten live lookups, 100-200 ms apart, as upstream), then is refused; controllers retry.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

from ...api import meta
from ...api.meta import Object
from . import CREATE, UPDATE, Attributes, reads
from .errors import new_forbidden

DEFAULT_SERVICE_ACCOUNT_NAME = "default"
ENFORCE_MOUNTABLE_SECRETS_ANNOTATION = "kubernetes.io/enforce-mountable-secrets"
SERVICE_ACCOUNT_VOLUME_NAME = "kube-api-access"
DEFAULT_API_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and seven seconds, so that the API server can tell
# the admission-made tokens apart (it extends them and warns when a stale one is used).
TOKEN_EXPIRATION_SECONDS = 3607
DEFAULT_LOOKUP_ATTEMPTS = 10


def token_volume_source() -> Object:
    """The projected source of the kube-api-access volume (upstream: TokenVolumeSource)."""
    return {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [
                {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            ]}},
        ],
    }  # fmt: skip


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _spec(a: Attributes) -> dict[str, Any]:
    assert a.object is not None
    spec = a.object.setdefault("spec", {})
    return spec if isinstance(spec, dict) else {}


def _is_mirror(pod: Object) -> bool:
    return MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def _should_ignore(a: Attributes) -> bool:
    if a.resource.group != "" or a.resource.plural != "pods":
        return True
    return a.subresource not in ("", "ephemeralcontainers") or not isinstance(a.object, dict)


def _secret_names(spec: dict[str, Any]) -> Iterator[str]:
    """Every secret a pod spec references (upstream: podutil.VisitPodSecretNames over all containers)."""
    for ref in _dicts(spec.get("imagePullSecrets")):
        yield ref.get("name") or ""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _dicts(spec.get(key)):
            for env_from in _dicts(c.get("envFrom")):
                if isinstance(env_from.get("secretRef"), dict):
                    yield env_from["secretRef"].get("name") or ""
            for env in _dicts(c.get("env")):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict):
                    yield ref.get("name") or ""
    for vol in _dicts(spec.get("volumes")):
        if isinstance(vol.get("secret"), dict):
            yield vol["secret"].get("secretName") or ""
        for src in _dicts((vol.get("projected") or {}).get("sources")):
            if isinstance(src.get("secret"), dict):
                yield src["secret"].get("name") or ""
        if isinstance(vol.get("azureFile"), dict):
            yield vol["azureFile"].get("secretName") or ""
        if isinstance(vol.get("csi"), dict) and isinstance(vol["csi"].get("nodePublishSecretRef"), dict):
            yield vol["csi"]["nodePublishSecretRef"].get("name") or ""
        for kind in ("cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos"):
            src = vol.get(kind)
            if isinstance(src, dict) and isinstance(src.get("secretRef"), dict):
                yield src["secretRef"].get("name") or ""


class ServiceAccount:
    name = "ServiceAccount"

    def __init__(self, host: Any, *, retry_interval: tuple[float, float] = (0.1, 0.2)) -> None:
        self.host = host
        self.retry_interval = retry_interval
        self.mount_service_account_token = True

    # -- lookups -------------------------------------------------------------------------------------------

    async def _service_account(self, namespace: str, name: str) -> Object | None:
        """From the cache, else live: the default account a few times, since the controller is about to make it."""
        found = reads.cached_get(self.host, "v1", "serviceaccounts", namespace, name)
        if found is not None:
            return found
        attempts = DEFAULT_LOOKUP_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT_NAME else 1
        interval = random.uniform(*self.retry_interval)
        for i in range(attempts):
            if i:
                await asyncio.sleep(interval)
            found = await reads.live_get(self.host, "v1", "serviceaccounts", namespace, name)
            if found is not None:
                return found
        return None

    async def _lookup(self, a: Attributes, name: str) -> Object:
        sa = await self._service_account(a.namespace, name)
        if sa is None:
            raise new_forbidden(
                a, f'error looking up service account {a.namespace}/{name}: serviceaccount "{name}" not found'
            )
        return sa

    # -- admission -----------------------------------------------------------------------------------------

    async def admit(self, a: Attributes) -> None:
        if _should_ignore(a) or a.operation != CREATE:
            return
        assert a.object is not None
        if _is_mirror(a.object):
            await self.validate(a)
            return
        spec = _spec(a)
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT_NAME
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name  # the deprecated field v1 writes alongside (upstream: conversion)
        sa = await self._lookup(a, name)
        if self.mount_service_account_token and _should_automount(sa, spec):
            _mount_token(spec)
        if not spec.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in _dicts(sa.get("imagePullSecrets"))]
            if not spec["imagePullSecrets"]:
                del spec["imagePullSecrets"]
        await self.validate(a)

    async def validate(self, a: Attributes) -> None:
        if _should_ignore(a):
            return
        assert a.object is not None
        spec = _spec(a)
        if a.operation == UPDATE and a.subresource == "ephemeralcontainers":
            await self._limit_ephemeral_container_secret_references(a, spec)
            return
        if a.operation != CREATE:
            return
        if _is_mirror(a.object):
            if spec.get("serviceAccountName"):
                raise new_forbidden(a, "a mirror pod may not reference service accounts")
            if any(True for _ in _secret_names(spec)):
                raise new_forbidden(a, "a mirror pod may not reference secrets")
            for vol in _dicts(spec.get("volumes")):
                for src in _dicts((vol.get("projected") or {}).get("sources")):
                    if src.get("serviceAccountToken") is not None:
                        raise new_forbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")
            return
        name = spec.get("serviceAccountName") or ""
        if not name:
            pod_name = (a.object.get("metadata") or {}).get("name", "")
            raise new_forbidden(a, f"no service account specified for pod {a.namespace}/{pod_name}")
        sa = await self._lookup(a, name)
        if _enforce_mountable_secrets(sa):
            problem = _limit_secret_references(sa, spec)
            if problem:
                raise new_forbidden(a, problem)

    async def _limit_ephemeral_container_secret_references(self, a: Attributes, spec: dict[str, Any]) -> None:
        name = spec.get("serviceAccountName") or ""
        if not name:
            pod_name = ((a.object or {}).get("metadata") or {}).get("name", "")
            raise new_forbidden(a, f"no service account specified for pod {a.namespace}/{pod_name}")
        sa = await self._lookup(a, name)
        if not _enforce_mountable_secrets(sa):
            return
        mountable = {s.get("name") for s in _dicts(sa.get("secrets"))}
        sa_name = (sa.get("metadata") or {}).get("name", "")
        for c in _dicts(spec.get("ephemeralContainers")):
            for env in _dicts(c.get("env")):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    raise new_forbidden(a, (
                        f'ephemeral container {c.get("name", "")} with envVar {env.get("name", "")} referencing '
                        f'secret.secretName="{ref.get("name", "")}" is not allowed because service account '
                        f"{sa_name} does not reference that secret"
                    ))  # fmt: skip
            for env_from in _dicts(c.get("envFrom")):
                ref = env_from.get("secretRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    raise new_forbidden(a, (
                        f'ephemeral container {c.get("name", "")} with envFrom referencing '
                        f'secret.secretName="{ref.get("name", "")}" is not allowed because service account '
                        f"{sa_name} does not reference that secret"
                    ))  # fmt: skip


def _should_automount(sa: Object, spec: dict[str, Any]) -> bool:
    """The pod's choice, else the account's, else yes."""
    if isinstance(spec.get("automountServiceAccountToken"), bool):
        return bool(spec["automountServiceAccountToken"])
    if isinstance(sa.get("automountServiceAccountToken"), bool):
        return bool(sa["automountServiceAccountToken"])
    return True


def _enforce_mountable_secrets(sa: Object) -> bool:
    value = ((sa.get("metadata") or {}).get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION)
    # Go's strconv.ParseBool; anything else counts as false
    return value in ("1", "t", "T", "TRUE", "true", "True")


def _mount_token(spec: dict[str, Any]) -> None:
    volumes = _dicts(spec.get("volumes"))
    existing = next((v["name"] for v in volumes if str(v.get("name", "")).startswith(SERVICE_ACCOUNT_VOLUME_NAME + "-")),
                    None)  # fmt: skip
    volume_name = existing or meta.generate_name(SERVICE_ACCOUNT_VOLUME_NAME + "-")
    needs_volume = False
    for key in ("initContainers", "containers"):
        for c in _dicts(spec.get(key)):
            mounts = c.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = c["volumeMounts"] = []
            if any(isinstance(m, dict) and m.get("mountPath") == DEFAULT_API_TOKEN_MOUNT_PATH for m in mounts):
                continue  # a mount of the user's own at that path wins
            mounts.append({"name": volume_name, "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH})
            needs_volume = True
    if existing is None and needs_volume:
        if not isinstance(spec.get("volumes"), list):
            spec["volumes"] = []
        spec["volumes"].append({"name": volume_name, "projected": token_volume_source()})


def _limit_secret_references(sa: Object, spec: dict[str, Any]) -> str:
    """Upstream's limitSecretReferences: the first reference the account does not allow, worded as upstream."""
    sa_name = (sa.get("metadata") or {}).get("name", "")
    mountable = {s.get("name") for s in _dicts(sa.get("secrets"))}
    tail = f"is not allowed because service account {sa_name} does not reference that secret"
    for vol in _dicts(spec.get("volumes")):
        secret = vol.get("secret")
        if isinstance(secret, dict) and secret.get("secretName") not in mountable:
            return f'volume with secret.secretName="{secret.get("secretName", "")}" {tail}'
    for key, what in (("initContainers", "init container"), ("containers", "container")):
        for c in _dicts(spec.get(key)):
            for env in _dicts(c.get("env")):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    return (f'{what} {c.get("name", "")} with envVar {env.get("name", "")} referencing '
                            f'secret.secretName="{ref.get("name", "")}" {tail}')  # fmt: skip
            for env_from in _dicts(c.get("envFrom")):
                ref = env_from.get("secretRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    return f'{what} {c.get("name", "")} with envFrom referencing secret.secretName="{ref.get("name", "")}" {tail}'
    pull = {s.get("name") for s in _dicts(sa.get("imagePullSecrets"))}
    for i, ref in enumerate(_dicts(spec.get("imagePullSecrets"))):
        if ref.get("name") not in pull:
            return (f'imagePullSecrets[{i}].name="{ref.get("name", "")}" is not allowed because service account '
                    f"{sa_name} does not reference that imagePullSecret")  # fmt: skip
    return ""
