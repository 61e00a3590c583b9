"""A Job's successPolicy (upstream: pkg/controller/job/success_policy.go): an Indexed Job can succeed before
all its indexes do. The rules are tried in order and the first met decides: a rule with `succeededIndexes`
(an interval string such as `0,2-4`) is met when all those indexes succeeded, or, with `succeededCount` too,
when at least that many of them did; a rule with only `succeededCount` is met when that many indexes
succeeded. The Job then gets `SuccessCriteriaMet` (reason `SuccessPolicy`, message `Matched rules at index
<i>`), its remaining pods are deleted, and `Complete` follows with the same reason and message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .indexed_job_utils import parse_indexes

REASON = "SuccessPolicy"


def match_succeeded_indexes_rule(required: set[int], succeeded: set[int], count: int | None) -> bool:
    """Whether the succeeded indexes cover `required`, or, with `count`, at least that many of them."""
    covered = len(required & succeeded)
    return covered == len(required) or (count is not None and covered >= count)


def match_success_policy(policy: Mapping[str, Any] | None, completions: int, succeeded: set[int]) -> str | None:
    """The SuccessCriteriaMet message when a rule of `policy` is met by the `succeeded` indexes, else None."""
    if not policy or not succeeded:
        return None
    for i, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            # Indexes that do not parse, or are all out of range, make a rule that is never met (the API
            # server refuses them; a stored one is skipped as upstream skips it).
            if not required:
                continue
            if match_succeeded_indexes_rule(required, succeeded, None if count is None else int(count)):
                return f"Matched rules at index {i}"
        elif count is not None and len(succeeded) >= int(count):
            return f"Matched rules at index {i}"
    return None
