"""Strategies of apps/v1: Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions
(upstream: pkg/registry/apps, pkg/apis/apps/v1/defaults.go, pkg/apis/apps/validation)."""

from __future__ import annotations

from typing import Any, ClassVar

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object, json_copy
from ...api.selectors import SelectorError, label_selector_from_object
from . import register
from .core import default_pod_spec, validate_pod_spec
from .strategy import Strategy, immutable


def _go_map(labels: dict[str, Any]) -> str:
    return (
        "map[string]string{"
        + ", ".join(f"{e.go_quote(k)}:{e.go_quote(str(v))}" for k, v in sorted(labels.items()))
        + "}"
    )


def validate_selector_and_template(spec: Any, *, restart_policies: tuple[str, ...] = ("Always",)) -> list[FieldError]:
    """A workload's selector must be set, valid, non-empty and match its pod template's labels."""
    if not isinstance(spec, dict):
        return [e.required("spec", "")]
    errs: list[FieldError] = []
    sel = spec.get("selector")
    template = spec.get("template")
    if sel is None:
        errs.append(e.required("spec.selector", ""))
    elif not sel.get("matchLabels") and not sel.get("matchExpressions"):
        errs.append(e.invalid("spec.selector", sel, "empty selector is invalid for deployment"))
    if not isinstance(template, dict):
        errs.append(e.required("spec.template", ""))
        return errs
    labels = (template.get("metadata") or {}).get("labels") or {}
    if sel:
        try:
            selector = label_selector_from_object(sel, "spec.selector")
            if not selector.matches(labels):
                errs.append(
                    e.invalid(
                        "spec.template.metadata.labels", _GoMap(labels), "`selector` does not match template `labels`"
                    )
                )
        except SelectorError as err:
            errs.append(e.invalid("spec.selector", sel, str(err)))
    tspec = template.get("spec")
    errs += validate_pod_spec(tspec, "spec.template.spec")
    if isinstance(tspec, dict):
        rp = tspec.get("restartPolicy", "Always")
        if rp not in restart_policies:
            errs.append(e.not_supported("spec.template.spec.restartPolicy", rp, restart_policies))
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        errs.append(e.invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    return errs


class _GoMap(dict):  # type: ignore[type-arg]
    """Renders as Go prints a map[string]string in a field error (what kubectl users see)."""

    def go_string(self) -> str:
        return _go_map(self)


def _default_template(spec: Object) -> None:
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


class WorkloadStrategy(Strategy):
    tracks_generation = True
    restart_policies: ClassVar[tuple[str, ...]] = ("Always",)

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_selector_and_template(obj.get("spec"), restart_policies=self.restart_policies)

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        errs += immutable(
            (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector"), "spec.selector"
        )
        return errs


@register("apps", "Deployment")
class DeploymentStrategy(WorkloadStrategy):
    # Upstream's status strategy resets only the spec and the labels: the deployment controller's status writes
    # also set the `deployment.kubernetes.io/revision` annotation.
    status_reset_meta = ("deletionTimestamp", "generation", "labels")

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        _default_template(spec)

    def validate(self, obj: Object) -> list[FieldError]:
        errs = super().validate(obj)
        strategy = (obj.get("spec") or {}).get("strategy") or {}
        typ = strategy.get("type")
        if typ not in ("RollingUpdate", "Recreate"):
            errs.append(e.not_supported("spec.strategy.type", typ, ("Recreate", "RollingUpdate")))
        if typ == "Recreate" and strategy.get("rollingUpdate") is not None:
            errs.append(
                e.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
            )
        return errs


@register("apps", "ReplicaSet")
class ReplicaSetStrategy(WorkloadStrategy):
    status_reset_meta = ("deletionTimestamp", "generation")  # upstream resets only the spec

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            _default_template(spec)


_STS_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
    "revisionHistoryLimit",
)


@register("apps", "StatefulSet")
class StatefulSetStrategy(WorkloadStrategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        us = spec.setdefault("updateStrategy", {})
        us.setdefault("type", "RollingUpdate")
        if us["type"] == "RollingUpdate":
            us.setdefault("rollingUpdate", {}).setdefault("partition", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
        _default_template(spec)
        for pvc in spec.get("volumeClaimTemplates") or []:
            if isinstance(pvc, dict):
                pvc.setdefault("apiVersion", "v1")
                pvc.setdefault("kind", "PersistentVolumeClaim")
                pvc.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        a, b = json_copy(new.get("spec") or {}), json_copy(old.get("spec") or {})
        for s in (a, b):
            for k in _STS_MUTABLE:
                s.pop(k, None)
        if a != b:
            errs.append(
                e.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                )
            )
        return errs


@register("apps", "DaemonSet")
class DaemonSetStrategy(WorkloadStrategy):
    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        us = spec.setdefault("updateStrategy", {})
        us.setdefault("type", "RollingUpdate")
        if us["type"] == "RollingUpdate":
            ru = us.setdefault("rollingUpdate", {})
            ru.setdefault("maxUnavailable", 1)
            ru.setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        _default_template(spec)


@register("apps", "ControllerRevision")
class ControllerRevisionStrategy(Strategy):
    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        return immutable(new.get("data"), old.get("data"), "data")
