"""Strategies of batch/v1: Jobs and CronJobs (upstream: pkg/registry/batch, pkg/apis/batch/v1/defaults.go,
pkg/apis/batch/validation). A Job without `manualSelector` gets upstream's generated selector on the
`batch.kubernetes.io/controller-uid` label."""

from __future__ import annotations

import re
from typing import Any

from ...api import errors as e
from ...api.errors import FieldError
from ...api.meta import Object
from . import register
from .apps import validate_selector_and_template
from .batch_validation import validate_job_spec_policies, validate_job_spec_policies_update
from .core import default_pod_spec
from .strategy import Strategy, immutable

JOB_RESTART_POLICIES = ("OnFailure", "Never")
UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_UID_LABEL = "controller-uid"
NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_NAME_LABEL = "job-name"
_CRON_MACROS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_CRON_FIELD = re.compile(
    r"^(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*$"
)


def default_job_spec(spec: Object) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    # With a back-off limit per index the Job-wide one is off unless set (upstream: math.MaxInt32).
    spec.setdefault("backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    # Upstream: Failed when a podFailurePolicy needs the pods' final state, else TerminatingOrFailed.
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed" if spec.get("podFailurePolicy") is None else "Failed")
    policy = spec.get("podFailurePolicy")
    for rule in (policy.get("rules") or []) if isinstance(policy, dict) else []:
        for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"  # upstream's +default="True"
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def validate_job_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    if not isinstance(spec, dict):
        return [e.required(path, "")]
    errs = [
        FieldError(x.type, x.field.replace("spec.", f"{path}.", 1) if path != "spec" else x.field, x.value, x.detail)
        for x in validate_selector_and_template({**spec, "replicas": 0}, restart_policies=JOB_RESTART_POLICIES)
    ]
    for k in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        val = spec.get(k)
        if val is not None and (not isinstance(val, int) or val < 0):
            errs.append(e.invalid(f"{path}.{k}", val, "must be greater than or equal to 0"))
    return errs + validate_job_spec_policies(spec, path)


@register("batch", "Job")
class JobStrategy(Strategy):
    tracks_generation = True
    selectable_fields = ("status.successful",)

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_job_spec(spec)

    async def allocate(self, obj: Object, old: Object | None, store: Any) -> None:
        spec = obj.get("spec")
        if old is not None or not isinstance(spec, dict) or spec.get("manualSelector"):
            return
        uid, name = obj["metadata"]["uid"], obj["metadata"].get("name", "")
        labels = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {})
        labels.update({UID_LABEL: uid, NAME_LABEL: name, LEGACY_UID_LABEL: uid, LEGACY_NAME_LABEL: name})
        if not spec.get("selector"):
            spec["selector"] = {"matchLabels": {UID_LABEL: uid}}

    def fields(self, obj: Object) -> dict[str, str]:
        out = super().fields(obj)
        out["status.successful"] = str((obj.get("status") or {}).get("successful", 0))
        return out

    def validate(self, obj: Object) -> list[FieldError]:
        return validate_job_spec(obj.get("spec"))

    def validate_update(self, new: Object, old: Object) -> list[FieldError]:
        errs = self.validate(new)
        ns, os_ = new.get("spec") or {}, old.get("spec") or {}
        errs += immutable(ns.get("selector"), os_.get("selector"), "spec.selector")
        errs += immutable(ns.get("completions"), os_.get("completions"), "spec.completions")
        errs += immutable(ns.get("completionMode"), os_.get("completionMode"), "spec.completionMode")
        errs += validate_job_spec_policies_update(ns, os_)
        if ns.get("template") != os_.get("template") and not (
            os_.get("suspend") and not (old.get("status") or {}).get("startTime")
        ):
            errs += immutable(ns.get("template"), os_.get("template"), "spec.template")
        return errs


def cron_schedule_errors(schedule: str) -> str:
    s = schedule.strip()
    if s.startswith("TZ=") or s.startswith("CRON_TZ="):
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    if s in _CRON_MACROS or s.startswith("@every "):
        return ""
    fields = s.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: {schedule}"
    for f in fields:
        if not _CRON_FIELD.match(f):
            return f"failed to parse int from {f}"
    return ""


_PLACEHOLDER_LABEL = "pyk8s.io/job-template"


@register("batch", "CronJob")
class CronJobStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        jt = spec.get("jobTemplate")
        if isinstance(jt, dict) and isinstance(jt.get("spec"), dict):
            default_job_spec(jt["spec"])

    def validate(self, obj: Object) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [e.required("spec", "")]
        errs: list[FieldError] = []
        schedule = spec.get("schedule")
        if not schedule:
            errs.append(e.required("spec.schedule", ""))
        else:
            problem = cron_schedule_errors(str(schedule))
            if problem:
                errs.append(e.invalid("spec.schedule", schedule, problem))
        policy = spec.get("concurrencyPolicy")
        if policy not in ("Allow", "Forbid", "Replace"):
            errs.append(e.not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
        jt = spec.get("jobTemplate")
        if not isinstance(jt, dict):
            errs.append(e.required("spec.jobTemplate", ""))
        else:
            jspec = dict(jt.get("spec") or {})
            # A Job's selector is generated when the Job is made: stand in a valid one that the template matches.
            jspec.setdefault("selector", {"matchLabels": {_PLACEHOLDER_LABEL: "x"}})
            tmpl = jspec.get("template") or {}
            labels = {**((tmpl.get("metadata") or {}).get("labels") or {}), _PLACEHOLDER_LABEL: "x"}
            jspec["template"] = {**tmpl, "metadata": {**(tmpl.get("metadata") or {}), "labels": labels}}
            errs += validate_job_spec(jspec, "spec.jobTemplate.spec")
        return errs
