"""Table printers of apps/v1 and batch/v1 kinds (upstream: pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

from typing import Any

from ...api.meta import Object
from ...api.selectors import SelectorError, label_selector_from_object
from ..tables import NAME, Cells, age, human_duration, printer
from .common import (
    _SELECTOR_DOC,
    AGE,
    CONTAINERS,
    IMAGES,
    _bool_ptr,
    _col,
    _containers,
    _d,
    _format_labels,
    _format_selector,
    _i,
    _l,
    _meta,
    _name,
    _s,
    _since,
    _template_spec,
    _time,
    _wide,
)
from .core import _replica_columns

# -- apps ------------------------------------------------------------------------------------------------

_READY_DOC = "Number of the pod with ready state"


@printer(
    "apps",
    "Deployment",
    [
        NAME,
        _col("Ready", _READY_DOC),
        _col(
            "Up-to-date",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        ),
        _col(
            "Available",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        _wide("Selector", "Label selector for pods."),
    ],
)
def deployment_row(obj: Object) -> Cells:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    try:
        selector = str(label_selector_from_object(spec.get("selector")))
    except SelectorError:
        selector = "<invalid>"
    names, images = _containers(_template_spec(obj))
    return [
        _name(obj),
        f"{_i(status.get('readyReplicas'))}/{_i(spec.get('replicas'))}",
        _i(status.get("updatedReplicas")),
        _i(status.get("availableReplicas")),
        age(obj),
        names,
        images,
        selector,
    ]


@printer("apps", "ReplicaSet", _replica_columns(_SELECTOR_DOC))
def replica_set_row(obj: Object) -> Cells:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    names, images = _containers(_template_spec(obj))
    return [
        _name(obj),
        _i(spec.get("replicas")),
        _i(status.get("replicas")),
        _i(status.get("readyReplicas")),
        age(obj),
        names,
        images,
        _format_selector(spec.get("selector")),
    ]


@printer("apps", "StatefulSet", [NAME, _col("Ready", _READY_DOC), AGE, CONTAINERS, IMAGES])
def stateful_set_row(obj: Object) -> Cells:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    names, images = _containers(_template_spec(obj))
    return [_name(obj), f"{_i(status.get('readyReplicas'))}/{_i(spec.get('replicas'))}", age(obj), names, images]


@printer(
    "apps",
    "DaemonSet",
    [
        NAME,
        _col(
            "Desired",
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
            "integer",
        ),
        _col(
            "Current",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
            "integer",
        ),
        _col(
            "Ready",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
            "integer",
        ),
        _col("Up-to-date", "The total number of nodes that are running updated daemon pod", "integer"),
        _col(
            "Available",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            "integer",
        ),
        _col("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node."),
        AGE,
        CONTAINERS,
        IMAGES,
        _wide("Selector", "A label query over pods that are managed by the daemon set."),
    ],
)
def daemon_set_row(obj: Object) -> Cells:
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    pod_spec = _template_spec(obj)
    names, images = _containers(pod_spec)
    return [
        _name(obj),
        _i(status.get("desiredNumberScheduled")),
        _i(status.get("currentNumberScheduled")),
        _i(status.get("numberReady")),
        _i(status.get("updatedNumberScheduled")),
        _i(status.get("numberAvailable")),
        _format_labels(pod_spec.get("nodeSelector")),
        age(obj),
        names,
        images,
        _format_selector(spec.get("selector")),
    ]


def _controller_name(obj: Object) -> str:
    """The controlling owner as `kind.group/name` (lower-cased kind and group), `<none>` without one."""
    for ref in (_d(r) for r in _l(_meta(obj).get("ownerReferences"))):
        if ref.get("controller") is not True:
            continue
        api_version, kind = _s(ref.get("apiVersion")), _s(ref.get("kind"))
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        if not kind and not group:
            return _s(ref.get("name"))
        group_kind = f"{kind}.{group}" if group else kind
        return f"{group_kind.lower()}/{_s(ref.get('name'))}"
    return "<none>"


@printer(
    "apps",
    "ControllerRevision",
    [
        NAME,
        _col("Controller", "Controller of the object"),
        _col("Revision", "Revision indicates the revision of the state represented by Data."),
        AGE,
    ],
)
def controller_revision_row(obj: Object) -> Cells:
    return [_name(obj), _controller_name(obj), _i(obj.get("revision")), age(obj)]


# -- batch -----------------------------------------------------------------------------------------------


def _job_condition(conditions: Any, type_: str) -> bool:
    """Whether the first condition of `type_` is True."""
    for c in (_d(c) for c in _l(conditions)):
        if c.get("type") == type_:
            return c.get("status") == "True"
    return False


def job_status(job: Object) -> str:
    conditions = _d(job.get("status")).get("conditions")
    if _job_condition(conditions, "Complete"):
        return "Complete"
    if _job_condition(conditions, "Failed"):
        return "Failed"
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    if _job_condition(conditions, "Suspended"):
        return "Suspended"
    if _job_condition(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


@printer(
    "batch",
    "Job",
    [
        NAME,
        _col("Status", "Status of the job."),
        _col("Completions", "The number of pods which reached phase Succeeded."),
        _col("Duration", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        _wide("Selector", "A label query over pods that should match the pod count."),
    ],
)
def job_row(job: Object) -> Cells:
    spec, status = _d(job.get("spec")), _d(job.get("status"))
    succeeded = _i(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_i(spec.get('completions'))}"
    elif _i(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_i(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    start, end = _time(status.get("startTime")), _time(status.get("completionTime"))
    duration = ""
    if start is not None:
        duration = _since(start) if end is None else human_duration(end - start)
    names, images = _containers(_template_spec(job))
    return [
        _name(job),
        job_status(job),
        completions,
        duration,
        age(job),
        names,
        images,
        _format_selector(spec.get("selector")),
    ]


@printer(
    "batch",
    "CronJob",
    [
        NAME,
        _col("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        _col(
            "Timezone",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
        ),
        _col(
            "Suspend",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.",
            "boolean",
        ),
        _col("Active", "A list of pointers to currently running jobs.", "integer"),
        _col("Last Schedule", "Information when was the last time the job was successfully scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        _wide("Selector", "A label query over pods that should match the pod count."),
    ],
)
def cron_job_row(cj: Object) -> Cells:
    spec, status = _d(cj.get("spec")), _d(cj.get("status"))
    last = status.get("lastScheduleTime")
    tz = spec.get("timeZone")
    job_spec = _d(_d(spec.get("jobTemplate")).get("spec"))
    names, images = _containers(_d(_d(job_spec.get("template")).get("spec")))
    return [
        _name(cj),
        _s(spec.get("schedule")),
        "<none>" if tz is None else _s(tz),
        _bool_ptr(spec.get("suspend")),
        len(_l(status.get("active"))),
        "<none>" if last is None else _since(last),
        age(cj),
        names,
        images,
        _format_selector(job_spec.get("selector")),
    ]
