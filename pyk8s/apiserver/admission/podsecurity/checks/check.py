"""What a Pod Security check is and what it answers (upstream: pod-security-admission/policy/checks.go).

A check belongs to the baseline or the restricted level and comes in revisions: each revision applies from
its minimum policy version until the next revision's. A restricted revision may name baseline checks it
replaces at the restricted level. Checks read the pod's metadata and spec as plain wire-shape dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

PodMeta = dict[str, Any]
PodSpec = dict[str, Any]


@dataclass(frozen=True)
class CheckResult:
    """Whether one check allows the pod; if not, a short reason and an optional detail (`host ports` and
    `8080, 9090`, say)."""

    allowed: bool
    forbidden_reason: str = ""
    forbidden_detail: str = ""


ALLOWED = CheckResult(True)

CheckPodFn = Callable[[PodMeta, PodSpec], CheckResult]


@dataclass(frozen=True)
class VersionedCheck:
    minimum_version: int  # the minor of the first v1.x policy version this revision applies to
    check_pod: CheckPodFn
    override_check_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    versions: tuple[VersionedCheck, ...] = field(default_factory=tuple)


UNKNOWN_FORBIDDEN_REASON = "unknown forbidden reason"


@dataclass(frozen=True)
class AggregateCheckResult:
    """The refusals of several checks, in check order (upstream: AggregateCheckResult)."""

    allowed: bool
    forbidden_reasons: tuple[str, ...] = ()
    forbidden_details: tuple[str, ...] = ()

    def forbidden_reason(self) -> str:
        """`host ports, privileged containers`: what the namespace-wide warnings print."""
        return ", ".join(self.forbidden_reasons)

    def forbidden_detail(self) -> str:
        """`host ports (8080, 9090), privileged containers`: what a refusal of one object prints."""
        return ", ".join(
            f"{reason} ({detail})" if detail else reason
            for reason, detail in zip(self.forbidden_reasons, self.forbidden_details, strict=True)
        )


def aggregate_check_results(results: Sequence[CheckResult]) -> AggregateCheckResult:
    reasons: list[str] = []
    details: list[str] = []
    for r in results:
        if not r.allowed:
            reasons.append(r.forbidden_reason or UNKNOWN_FORBIDDEN_REASON)
            details.append(r.forbidden_detail)
    return AggregateCheckResult(not reasons, tuple(reasons), tuple(details))
