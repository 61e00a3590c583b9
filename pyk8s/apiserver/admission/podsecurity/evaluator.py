"""Which checks run for a level and version, and running them (upstream: pod-security-admission/policy/
registry.go `checkRegistry`).

The tables are built once: for every policy version v1.0 up to the newest minimum version any check names,
the baseline list and the restricted list (restricted checks plus the baseline checks none of them replaces).
`latest` and versions past the newest use the newest table. Checks run in a fixed order, baseline IDs sorted
then restricted IDs sorted, so that messages are stable.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from .api import BASELINE, PRIVILEGED, RESTRICTED, LevelVersion
from .checks import DEFAULT_CHECKS, Check, CheckResult, VersionedCheck
from .checks.check import CheckPodFn, PodMeta, PodSpec


def _revision_at(check: Check, minor: int) -> VersionedCheck | None:
    """The check's revision in force at v1.<minor>, None before its first one."""
    found = None
    for v in check.versions:
        if v.minimum_version <= minor:
            found = v
    return found


def _validate(checks: Sequence[Check]) -> None:
    levels: dict[str, str] = {}
    for c in checks:
        if c.id in levels:
            raise ValueError(f"multiple checks registered for ID {c.id}")
        levels[c.id] = c.level
        if c.level not in (BASELINE, RESTRICTED):
            raise ValueError(f"check {c.id}: invalid level {c.level}")
        if not c.versions:
            raise ValueError(f"check {c.id}: empty")
        minima = [v.minimum_version for v in c.versions]
        if any(b <= a for a, b in pairwise(minima)):
            raise ValueError(f"check {c.id}: versions must be strictly increasing")
    for c in checks:
        for v in c.versions:
            if v.override_check_ids and c.level != RESTRICTED:
                raise ValueError(f"check {c.id}: only restricted checks may set overrides")
            for o in v.override_check_ids:
                if levels.get(o, BASELINE) != BASELINE:
                    raise ValueError(f"check {c.id}: overrides {levels[o]} check {o}")


class Evaluator:
    def __init__(self, checks: Sequence[Check] = DEFAULT_CHECKS) -> None:
        _validate(checks)
        self.max_minor = max(c.versions[-1].minimum_version for c in checks)
        baseline = sorted((c for c in checks if c.level == BASELINE), key=lambda c: c.id)
        restricted = sorted((c for c in checks if c.level == RESTRICTED), key=lambda c: c.id)
        self._baseline: list[tuple[CheckPodFn, ...]] = []
        self._restricted: list[tuple[CheckPodFn, ...]] = []
        for minor in range(self.max_minor + 1):
            base_now = [(c, r) for c in baseline if (r := _revision_at(c, minor)) is not None]
            restr_now = [(c, r) for c in restricted if (r := _revision_at(c, minor)) is not None]
            overridden = {o for _, r in restr_now for o in r.override_check_ids}
            self._baseline.append(tuple(r.check_pod for _, r in base_now))
            self._restricted.append(
                tuple(r.check_pod for c, r in base_now if c.id not in overridden)
                + tuple(r.check_pod for _, r in restr_now)
            )

    def checks_for(self, lv: LevelVersion) -> tuple[CheckPodFn, ...]:
        if lv.level == PRIVILEGED:
            return ()
        minor = self.max_minor if lv.version.latest else min(lv.version.minor, self.max_minor)
        return self._baseline[minor] if lv.level == BASELINE else self._restricted[minor]

    def evaluate_pod(self, lv: LevelVersion, meta: PodMeta, spec: PodSpec) -> list[CheckResult]:
        return [check(meta, spec) for check in self.checks_for(lv)]
