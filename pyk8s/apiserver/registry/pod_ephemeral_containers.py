"""Writes through `pods/<name>/ephemeralcontainers` (what `kubectl debug` sends): they change
spec.ephemeralContainers and nothing else, may only add containers, never change or remove one, and an
ephemeral container may not set what would make the pod rely on it (ports, probes, resources, lifecycle...)
(upstream: pkg/registry/core/pod/strategy.go podEphemeralContainersStrategy, pkg/apis/core/validation
ValidatePodEphemeralContainersUpdate and validateEphemeralContainers)."""

from __future__ import annotations

import json
from typing import Any

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object, json_copy

# Fields of EphemeralContainerCommon an ephemeral container may not set (upstream: every field but those in
# allowedEphemeralContainerFields), by JSON name.
FORBIDDEN_FIELDS = (
    "ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe", "readinessProbe", "startupProbe",
    "lifecycle",
)  # fmt: skip
_NOT_ALLOWED = "cannot be set for an Ephemeral Container"
# Metadata a subresource write cannot change (upstream metav1.ResetObjectMetaForStatus).
_KEPT_META = ("deletionTimestamp", "generation", "labels", "annotations", "finalizers", "ownerReferences")
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def prepare_update(new: Object, old: Object, default_container: Any) -> None:
    """Keep everything of `old` but the new spec.ephemeralContainers (defaulted as containers are)."""
    spec = new.get("spec")
    ephemeral = spec.get("ephemeralContainers") if isinstance(spec, dict) else None
    meta, old_meta = new.setdefault("metadata", {}), old.get("metadata") or {}
    for k in [k for k in new if k not in ("apiVersion", "kind", "metadata")]:
        new.pop(k)
    for k, val in old.items():
        if k not in ("apiVersion", "kind", "metadata"):
            new[k] = json_copy(val)
    for k in _KEPT_META:
        if k in old_meta:
            meta[k] = json_copy(old_meta[k])
        else:
            meta.pop(k, None)
    new_spec = new.setdefault("spec", {})
    if ephemeral:
        for c in ephemeral if isinstance(ephemeral, list) else ():
            if isinstance(c, dict):
                default_container(c)
        new_spec["ephemeralContainers"] = ephemeral
    else:
        new_spec.pop("ephemeralContainers", None)


def validate_update(new: Object, old: Object, validate_container: Any) -> list[FieldError]:
    """The errors of an ephemeral containers write, in upstream's words."""
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [e.forbidden("", "static pods do not support ephemeral containers")]
    spec = new.get("spec") or {}
    path = "spec.ephemeralContainers"
    ephemeral = spec.get("ephemeralContainers") or []
    if not isinstance(ephemeral, list):
        return [e.type_invalid(path, ephemeral, "must be a list")]
    errs: list[FieldError] = []
    others = {
        c.get("name") for key in ("containers", "initContainers") for c in spec.get(key) or () if isinstance(c, dict)
    }
    names = {n for n in others if isinstance(n, str)}
    volumes = {v.get("name") for v in spec.get("volumes") or () if isinstance(v, dict)}
    for i, c in enumerate(ephemeral):
        where = f"{path}[{i}]"
        errs += validate_container(c, where, names)
        if not isinstance(c, dict):
            continue
        target = c.get("targetContainerName")
        if target and target not in others:
            errs.append(e.FieldError(e.NOT_FOUND, f"{where}.targetContainerName", target))
        for fld in FORBIDDEN_FIELDS:
            if _is_set(c.get(fld)):
                errs.append(e.forbidden(f"{where}.{fld}", _NOT_ALLOWED))
        for j, m in enumerate(c.get("volumeMounts") or ()):
            if not isinstance(m, dict):
                continue
            if m.get("name") not in volumes:
                errs.append(e.FieldError(e.NOT_FOUND, f"{where}.volumeMounts[{j}].name", m.get("name")))
            for sub in ("subPath", "subPathExpr"):
                if m.get(sub):
                    errs.append(e.forbidden(f"{where}.volumeMounts[{j}].{sub}", _NOT_ALLOWED))
    current = {c.get("name"): c for c in ephemeral if isinstance(c, dict)}
    for before in (old.get("spec") or {}).get("ephemeralContainers") or ():
        name = before.get("name", "")
        after = current.get(name)
        if after is None:
            errs.append(e.forbidden(path, f'existing ephemeral containers "{name}" may not be removed\n'))
        elif after != before:
            errs.append(
                e.forbidden(
                    f"{path}[{name}]",
                    f'existing ephemeral containers "{name}" may not be changed\n{_diff(before, after)}',
                )
            )
    return errs


def _is_set(value: Any) -> bool:
    """Whether a field holds something other than its Go zero value (an empty object is a zero struct)."""
    if isinstance(value, dict):
        return any(_is_set(v) or isinstance(v, dict | list) for v in value.values())
    return value not in (None, "", [], 0, False)


def _diff(before: Object, after: Object) -> str:
    """The fields that differ, before and after (upstream prints a go-cmp diff; this says the same plainly)."""
    lines = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            lines.append(f"-\t{k}: {json.dumps(before.get(k))}")
            lines.append(f"+\t{k}: {json.dumps(after.get(k))}")
    return "\n".join(lines)
