"""A Job's podFailurePolicy (upstream: pkg/controller/job/pod_failure_policy.go): the first rule that matches a
failed pod decides what its failure means: `FailJob` fails the whole Job at once, `FailIndex` fails the pod's
index at once (Indexed Jobs with backoffLimitPerIndex, which the API server requires for it), `Ignore` does not
count it against backoffLimit or backoffLimitPerIndex, `Count` counts it. A rule matches on a container's exit
code (`onExitCodes`: one container, or any, whose terminated exit code is `In`/`NotIn` the values; exit code 0
never matches) or on a pod condition (`onPodConditions`, e.g. DisruptionTarget)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Object = Mapping[str, Any]


def _exit_code_match(pod: Object, rule: Object) -> str | None:
    """The message of a FailJob match on exit codes, '' for a match of another action, None for no match."""
    req = rule.get("onExitCodes") or {}
    values = set(req.get("values") or ())
    container = req.get("containerName")
    status = pod.get("status") or {}
    for c in [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]:
        if container and c.get("name") != container:
            continue
        term = ((c.get("state") or {}).get("terminated")) or {}
        if not term:
            continue
        code = int(term.get("exitCode") or 0)
        if code == 0:
            continue
        if (code in values) == (req.get("operator") == "In"):
            return f"Container {c.get('name')} for pod {_pod_key(pod)} failed with exit code {code}"
    return None


def _condition_match(pod: Object, rule: Object) -> str | None:
    # The pod's conditions in their order, as upstream looks: the first that some pattern matches is named.
    for cond in (pod.get("status") or {}).get("conditions") or ():
        for pattern in rule.get("onPodConditions") or ():
            if cond.get("type") == pattern.get("type") and cond.get("status") == (pattern.get("status") or "True"):
                return f"Pod {_pod_key(pod)} has condition {cond.get('type')}"
    return None


def _pod_key(pod: Object) -> str:
    md = pod.get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}"


def match_pod_failure_policy(policy: Object | None, pod: Object) -> tuple[str | None, bool, str | None]:
    """(the FailJob message if a FailJob rule matched, whether the failure counts, the matched action)."""
    if not policy:
        return None, True, None
    for i, rule in enumerate(policy.get("rules") or ()):
        what = _exit_code_match(pod, rule) if rule.get("onExitCodes") else _condition_match(pod, rule)
        if what is None:
            continue
        action = rule.get("action")
        if action == "FailJob":
            return f"{what} matching FailJob rule at index {i}", True, action
        if action == "Ignore":
            return None, False, action
        if action in ("FailIndex", "Count"):
            return None, True, action
        # An action this controller does not know (an API server that allowed it) matches nothing: the next
        # rule is tried, as upstream's switch falls through.
    return None, True, None
