"""The VolumeBinding plugin's assume caches of PVs and PVCs (upstream: plugins/volumebinding/assume_cache.go and
util/assumecache).

Reserve records the PV and PVC objects the pod's volume bindings will write ("assumed"), so the next pods'
scheduling cycles see those volumes as taken before the API server does. Reads go to the informer-backed lister
and return the assumed version instead, until the lister holds a newer version (higher resourceVersion) of the
object or the object is gone; Unreserve (or a failed API write) restores the lister's version.
"""

from __future__ import annotations

from typing import Any

from ..storage_helpers import meta, resource_version, volume_class

Obj = dict[str, Any]


class AssumeError(Exception):
    """Assuming an object the cache does not have, or an older version than it holds."""


class AssumeCache:
    """Assumed objects of one resource over a lister (`get(resource, ns, name)` / `list(resource)`)."""

    def __init__(self, lister: Any, resource: str, description: str) -> None:
        self.lister = lister
        self.resource = resource
        self.description = description  # how upstream names the type in errors ("v1.PersistentVolume")
        self._assumed: dict[str, Obj] = {}

    @staticmethod
    def split(key: str) -> tuple[str, str]:
        ns, _, name = key.rpartition("/")
        return ns, name

    def get_api(self, key: str) -> Obj | None:
        """The lister's (API server's) version, ignoring assumptions."""
        ns, name = self.split(key)
        return self.lister.get(self.resource, ns, name)

    def _latest(self, key: str, api: Obj | None) -> Obj | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or resource_version(api) > resource_version(assumed):
            # Deleted, or the informer brought a newer version: the assumption is over.
            del self._assumed[key]
            return api
        return assumed

    def get(self, key: str) -> Obj | None:
        """The assumed version if there is one still current, else the lister's."""
        return self._latest(key, self.get_api(key))

    def list(self) -> list[Obj]:
        out = []
        for obj in self.lister.list(self.resource):
            md = meta(obj)
            key = f"{md.get('namespace', '')}/{md.get('name', '')}" if md.get("namespace") else md.get("name", "")
            latest = self._latest(key, obj)
            if latest is not None:
                out.append(latest)
        return out

    def assume(self, obj: Obj) -> None:
        md = meta(obj)
        key = f"{md.get('namespace', '')}/{md.get('name', '')}" if md.get("namespace") else md.get("name", "")
        stored = self.get(key)
        if stored is None:
            raise AssumeError(f'could not find {self.description} "{key}"')
        new_version, stored_version = resource_version(obj), resource_version(stored)
        if new_version < stored_version:
            raise AssumeError(
                f'{self.description} "{key}" is out of sync (stored: {stored_version}, assume: {new_version})'
            )
        self._assumed[key] = obj

    def restore(self, key: str) -> None:
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed


class PVAssumeCache(AssumeCache):
    def __init__(self, lister: Any) -> None:
        super().__init__(lister, "persistentvolumes", "v1.PersistentVolume")

    def list_pvs(self, storage_class: str) -> list[Obj]:
        """The PVs of a storage class, assumed versions included (upstream indexes PVs by class)."""
        return [pv for pv in self.list() if volume_class(pv) == storage_class]


class PVCAssumeCache(AssumeCache):
    def __init__(self, lister: Any) -> None:
        super().__init__(lister, "persistentvolumeclaims", "v1.PersistentVolumeClaim")
