"""managedFields across the `scale` subresource (upstream: apimachinery/pkg/util/managedfields/scalehandler.go).

A Scale has one field anyone can own, `spec.replicas`; the workload behind it keeps the owners. Before a write
to the Scale, the workload's managers that own its replicas become the Scale's managers of `spec.replicas`
(`to_subresource`); after it, the Scale's managers go back onto the workload (`to_parent`): a manager that
no longer owns the Scale's replicas loses the workload's, one that does keeps its entry, and a new one owns
the workload's replicas field.
"""

from __future__ import annotations

from typing import Any

from .field_manager import Managed, decode, encode
from .structured_merge.fieldpath import Path
from .structured_merge.updater import VersionedSet

SCALE_API_VERSION = "autoscaling/v1"
REPLICAS_IN_SCALE: Path = ("f:spec", "f:replicas")


class ScaleHandler:
    """`replicas`: the workload's replicas field by the API version its entries name (for built-in workloads
    `spec.replicas` in their one version); `api_version`: the workload's version the Scale writes land in."""

    def __init__(self, parent_entries: Any, api_version: str, replicas: dict[str, Path]) -> None:
        self.parent_entries = parent_entries
        self.api_version = api_version
        self.replicas = replicas

    def to_subresource(self) -> list[dict[str, Any]]:
        parent = decode(self.parent_entries) or Managed()
        out = Managed()
        for ident, vs in parent.fields.items():
            path = self.replicas.get(vs.api_version)
            if path is not None and path in vs.paths:
                out.fields[ident] = VersionedSet({REPLICAS_IN_SCALE}, SCALE_API_VERSION, vs.applied)
                out.times[ident] = parent.times.get(ident)
        return encode(out)

    def to_parent(self, scale_entries: Any) -> list[dict[str, Any]]:
        parent = decode(self.parent_entries) or Managed()
        scale = decode(scale_entries) or Managed()
        remaining = dict(scale.fields)
        out = Managed()
        for ident, vs in parent.fields.items():
            if vs.api_version not in self.replicas:
                continue  # an API version the workload no longer has: dropped, as upstream
            path = self.replicas[vs.api_version]
            if path not in vs.paths:
                out.fields[ident], out.times[ident] = vs, parent.times.get(ident)
                continue
            if ident not in remaining:
                rest = vs.paths - {path}  # the Scale write took the replicas from it
                if rest:
                    out.fields[ident] = VersionedSet(rest, vs.api_version, vs.applied)
                    out.times[ident] = parent.times.get(ident)
            else:
                out.fields[ident], out.times[ident] = vs, parent.times.get(ident)
                del remaining[ident]
        for ident, vs in remaining.items():
            if REPLICAS_IN_SCALE in vs.paths:
                out.fields[ident] = VersionedSet({self.replicas[self.api_version]}, self.api_version, vs.applied)
                out.times[ident] = parent.times.get(ident)  # as upstream: none for a manager new to the workload
        return encode(out)
