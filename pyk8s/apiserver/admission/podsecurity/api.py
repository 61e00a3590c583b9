"""Pod Security Standards levels, policy versions and the namespace labels that choose them (upstream:
pod-security-admission/api: constants.go and helpers.go).

A namespace names a level and a version for each of three modes (enforce, audit, warn) with the
`pod-security.kubernetes.io/<mode>[-version]` labels. A label with a bad value is an error on the namespace
write; when a policy has to be evaluated anyway, a bad enforce level counts as `restricted` (fail closed), a
bad audit or warn level as `privileged` (fail open) and a bad version as `latest`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

from ....api import errors

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
VALID_LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
_LEVEL_RANK = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}

VERSION_LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"
AUDIT_ANNOTATION_PREFIX = LABEL_PREFIX
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

# Audit annotation keys, written with AUDIT_ANNOTATION_PREFIX in front.
EXEMPTION_REASON_ANNOTATION_KEY = "exempt"
AUDIT_VIOLATIONS_ANNOTATION_KEY = "audit-violations"
ENFORCED_POLICY_ANNOTATION_KEY = "enforce-policy"

_LEVEL_ERROR = "must be one of " + ", ".join(VALID_LEVELS)
_VERSION_ERROR = 'must be "latest" or "v1.x"'
_VERSION_RE = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True)
class Version:
    """A policy version: `v1.<minor>`, or `latest` (newer than every numbered version, future ones too)."""

    minor: int = 0
    latest: bool = False

    LATEST: ClassVar[Version]

    def __str__(self) -> str:
        return VERSION_LATEST if self.latest else f"v1.{self.minor}"

    def older(self, other: Version) -> bool:
        if self.latest:
            return False
        if other.latest:
            return True
        return self.minor < other.minor


Version.LATEST = Version(latest=True)


def parse_level(text: str) -> tuple[str, str | None]:
    """The level, or `restricted` and upstream's error text when `text` is not a level."""
    if text in _LEVEL_RANK:
        return text, None
    return RESTRICTED, _LEVEL_ERROR


def parse_version(text: str) -> tuple[Version, str | None]:
    """The version, or `latest` and upstream's error text when `text` is not one."""
    if text == VERSION_LATEST:
        return Version.LATEST, None
    m = _VERSION_RE.match(text)
    if m is None:
        return Version.LATEST, _VERSION_ERROR
    return Version(int(m.group(1))), None


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` is less, as or more restrictive than `b`."""
    ra, rb = _LEVEL_RANK.get(a, 1), _LEVEL_RANK.get(b, 1)
    return (ra > rb) - (ra < rb)


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: Version

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"

    def equivalent(self, other: LevelVersion) -> bool:
        """Same effect: two privileged ones whatever their versions, else the same level and version."""
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


PRIVILEGED_LATEST = LevelVersion(PRIVILEGED, Version.LATEST)


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = PRIVILEGED_LATEST
    audit: LevelVersion = PRIVILEGED_LATEST
    warn: LevelVersion = PRIVILEGED_LATEST

    def fully_privileged(self) -> bool:
        return self.enforce.level == PRIVILEGED and self.audit.level == PRIVILEGED and self.warn.level == PRIVILEGED

    def equivalent(self, other: Policy) -> bool:
        return (
            self.enforce.equivalent(other.enforce)
            and self.audit.equivalent(other.audit)
            and self.warn.equivalent(other.warn)
        )


DEFAULT_POLICY = Policy()


def _label_error(label: str, value: str, detail: str) -> errors.FieldError:
    return errors.invalid(f"metadata.labels[{label}]", value, detail)


def policy_to_evaluate(
    labels: dict[str, str] | None, defaults: Policy = DEFAULT_POLICY
) -> tuple[Policy, list[errors.FieldError]]:
    """The policy a namespace's labels select over `defaults`, and the label errors (upstream:
    PolicyToEvaluate). Without a warn level of its own, warn follows a stricter enforce level (and its
    version, unless warn has a version label)."""
    if not labels:
        return defaults, []
    errs: list[errors.FieldError] = []
    enforce, audit, warn = defaults.enforce, defaults.audit, defaults.warn
    has_enforce_level = has_warn_level = has_warn_version = False

    if (text := labels.get(ENFORCE_LEVEL_LABEL)) is not None:
        level, err = parse_level(text)
        enforce = replace(enforce, level=level)
        has_enforce_level = err is None  # a bad enforce level does not carry over to warn
        if err:
            errs.append(_label_error(ENFORCE_LEVEL_LABEL, text, err))
    if (text := labels.get(ENFORCE_VERSION_LABEL)) is not None:
        version, err = parse_version(text)
        enforce = replace(enforce, version=version)
        if err:
            errs.append(_label_error(ENFORCE_VERSION_LABEL, text, err))
    if (text := labels.get(AUDIT_LEVEL_LABEL)) is not None:
        level, err = parse_level(text)
        audit = replace(audit, level=PRIVILEGED if err else level)
        if err:
            errs.append(_label_error(AUDIT_LEVEL_LABEL, text, err))
    if (text := labels.get(AUDIT_VERSION_LABEL)) is not None:
        version, err = parse_version(text)
        audit = replace(audit, version=version)
        if err:
            errs.append(_label_error(AUDIT_VERSION_LABEL, text, err))
    if (text := labels.get(WARN_LEVEL_LABEL)) is not None:
        has_warn_level = True
        level, err = parse_level(text)
        warn = replace(warn, level=PRIVILEGED if err else level)
        if err:
            errs.append(_label_error(WARN_LEVEL_LABEL, text, err))
    if (text := labels.get(WARN_VERSION_LABEL)) is not None:
        has_warn_version = True
        version, err = parse_version(text)
        warn = replace(warn, version=version)
        if err:
            errs.append(_label_error(WARN_VERSION_LABEL, text, err))

    if not has_warn_level and has_enforce_level and compare_levels(enforce.level, warn.level) > 0:
        warn = LevelVersion(enforce.level, warn.version if has_warn_version else enforce.version)
    return Policy(enforce, audit, warn), errs
