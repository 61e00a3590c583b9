"""What batch/v1 validation says about a Job's failure and success handling (upstream:
pkg/apis/batch/validation/validation.go validateJobSpec, validatePodFailurePolicy, validateSuccessPolicy,
validatePodReplacementPolicy, ValidateJobSpecUpdate): `completionMode`, `backoffLimitPerIndex` and
`maxFailedIndexes` (Indexed Jobs only), `podFailurePolicy` (the FailIndex action only with
backoffLimitPerIndex), `successPolicy` (Indexed Jobs only) and `podReplacementPolicy`, with upstream's limits
and messages. registry/batch.py calls it beside the checks every workload shares."""

from __future__ import annotations

from typing import Any

from ...api import errors as e
from ...api.errors import _OMIT, FieldError
from ...api.validation import is_qualified_name
from .strategy import immutable

MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES = 255
MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS = 20
MAX_SUCCESS_POLICY_SUCCEEDED_INDEXES_LENGTH = 64 * 1024
MAX_SUCCESS_POLICY_RULES = 20

POD_FAILURE_POLICY_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
ON_EXIT_CODES_OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
POD_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")


def _invalid_no_value(field: str, detail: str) -> FieldError:
    """An Invalid error that prints no value (upstream: field.OmitValueType), as the rule errors do."""
    return FieldError(e.INVALID, field, _OMIT, detail)


class _GoInt32s(list):  # type: ignore[type-arg]
    """Exit codes as Go prints a []int32 among a field error's values (`[]int32{1, 2}`)."""

    def go_string(self) -> str:
        return "[]int32{" + ", ".join(str(v) for v in self) + "}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _nonnegative(errs: list[FieldError], path: str, value: Any) -> None:
    if value is not None and (_int(value) is None or value < 0):
        errs.append(e.invalid(path, value, "must be greater than or equal to 0"))


def parse_index_interval(text: str, completions: int) -> tuple[int, int]:
    """One `a` or `a-b` of an index list, both below `completions`; ValueError with upstream's words if not."""
    limits = text.split("-")
    if len(limits) > 2:
        raise ValueError(
            f'the fragment "{text}" violates the requirement that an index interval can have at most two parts '
            "separated by '-'"
        )
    bounds: list[int] = []
    for part in limits:
        try:
            bound = int(part)
        except ValueError:
            raise ValueError(f'cannot convert string to integer for index: "{part}"') from None
        if bound >= completions:
            raise ValueError(f'too large index: "{part}"')
        bounds.append(bound)
    if len(bounds) == 2 and bounds[0] >= bounds[1]:
        raise ValueError(f"non-increasing order, previous: {bounds[0]}, current: {bounds[1]}")
    return bounds[0], bounds[-1]


def validate_indexes_format(text: str, completions: int) -> int:
    """How many indexes an interval list such as `0,2-4` names, checking it is well formed, in increasing order
    and below `completions` (upstream: validateIndexesFormat); ValueError if not."""
    if not text:
        return 0
    total, last = 0, None
    for part in text.split(","):
        first, end = parse_index_interval(part, completions)
        if last is not None and last >= first:
            raise ValueError(f"non-increasing order, previous: {last}, current: {first}")
        total += end - first + 1
        last = end
    return total


def validate_job_spec_policies(spec: dict[str, Any], path: str = "spec") -> list[FieldError]:
    """The checks of upstream's validateJobSpec on completion mode, per-index back-off, podFailurePolicy,
    successPolicy and podReplacementPolicy."""
    errs: list[FieldError] = []
    mode = spec.get("completionMode")
    completions, parallelism = _int(spec.get("completions")), _int(spec.get("parallelism"))
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    _nonnegative(errs, f"{path}.backoffLimitPerIndex", per_index)
    if max_failed is not None:
        _nonnegative(errs, f"{path}.maxFailedIndexes", max_failed)
        if per_index is None:
            errs.append(e.required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    max_failed = _int(max_failed)
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errs.append(e.not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
    if mode == "Indexed":
        if spec.get("completions") is None:
            errs.append(e.required(f"{path}.completions", "when completion mode is Indexed"))
        if parallelism is not None and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
            errs.append(e.invalid(f"{path}.parallelism", parallelism,
                                  f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion "
                                  "mode is Indexed"))  # fmt: skip
        if completions is not None and max_failed is not None and max_failed > completions:
            errs.append(e.invalid(f"{path}.maxFailedIndexes", max_failed, "must be less than or equal to completions"))
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
            errs.append(e.invalid(f"{path}.maxFailedIndexes", max_failed,
                                  f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"))  # fmt: skip
        if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
            high = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            if max_failed is None:
                detail = f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
                errs.append(e.required(f"{path}.maxFailedIndexes", detail))
            if parallelism is not None and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
                detail = f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {high}"
                errs.append(e.invalid(f"{path}.parallelism", parallelism, detail))
            if max_failed is not None and max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
                errs.append(e.invalid(f"{path}.maxFailedIndexes", max_failed,
                                      f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} "
                                      f"{high}"))  # fmt: skip
    if mode in (None, "NonIndexed"):
        if per_index is not None:
            errs.append(e.invalid(f"{path}.backoffLimitPerIndex", per_index, "requires indexed completion mode"))
        if spec.get("maxFailedIndexes") is not None:
            errs.append(e.invalid(f"{path}.maxFailedIndexes", spec["maxFailedIndexes"],
                                  "requires indexed completion mode"))  # fmt: skip
    if spec.get("podFailurePolicy") is not None:
        errs += _validate_pod_failure_policy(spec, f"{path}.podFailurePolicy")
    if spec.get("successPolicy") is not None:
        if mode != "Indexed":
            errs.append(e.invalid(f"{path}.successPolicy", spec["successPolicy"], "requires indexed completion mode"))
        else:
            errs += _validate_success_policy(spec, f"{path}.successPolicy")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if spec.get("podFailurePolicy") is not None:
            if replacement != "Failed":
                errs.append(e.not_supported(f"{path}.podReplacementPolicy", replacement, ("Failed",)))
        elif replacement not in POD_REPLACEMENT_POLICIES:
            errs.append(e.not_supported(f"{path}.podReplacementPolicy", replacement, POD_REPLACEMENT_POLICIES))
    template_spec = (spec.get("template") or {}).get("spec") or {}
    restart = template_spec.get("restartPolicy") if isinstance(template_spec, dict) else None
    if spec.get("podFailurePolicy") is not None and restart == "OnFailure":
        errs.append(e.invalid(f"{path}.template.spec.restartPolicy", restart,
                              'only "Never" is supported when podFailurePolicy is specified'))  # fmt: skip
    return errs


def _container_names(spec: dict[str, Any]) -> set[str]:
    pod = (spec.get("template") or {}).get("spec") or {}
    return {str(c.get("name")) for key in ("containers", "initContainers") for c in pod.get(key) or ()
            if isinstance(c, dict)}  # fmt: skip


def _validate_pod_failure_policy(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec["podFailurePolicy"]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    rules = rules if isinstance(rules, list) else []
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(e.too_many(f"{path}.rules", len(rules), MAX_POD_FAILURE_POLICY_RULES))
    names = _container_names(spec)
    for i, rule in enumerate(rules):
        if isinstance(rule, dict):
            errs += _validate_pod_failure_policy_rule(spec, rule, f"{path}.rules[{i}]", names)
    return errs


def _validate_pod_failure_policy_rule(
    spec: dict[str, Any], rule: dict[str, Any], path: str, names: set[str]
) -> list[FieldError]:
    errs: list[FieldError] = []
    action = rule.get("action")
    valid_actions = ", ".join(f'"{a}"' for a in POD_FAILURE_POLICY_ACTIONS)
    if not action:
        errs.append(e.required(f"{path}.action", f"valid values: [{valid_actions}]"))
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            errs.append(e.invalid(f"{path}.action", action, "requires the backoffLimitPerIndex to be set"))
    elif action not in POD_FAILURE_POLICY_ACTIONS:
        errs.append(e.not_supported(f"{path}.action", action, POD_FAILURE_POLICY_ACTIONS))
    on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
    if on_exit is not None:
        errs += _validate_on_exit_codes(on_exit if isinstance(on_exit, dict) else {}, f"{path}.onExitCodes", names)
    if on_conditions:
        errs += _validate_on_pod_conditions(on_conditions, f"{path}.onPodConditions")
    if on_exit is not None and on_conditions:
        errs.append(_invalid_no_value(path, "specifying both OnExitCodes and OnPodConditions is not supported"))
    if on_exit is None and not on_conditions:
        errs.append(_invalid_no_value(path, "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs


def _validate_on_pod_conditions(patterns: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    patterns = patterns if isinstance(patterns, list) else []
    if len(patterns) > MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS:
        errs.append(e.too_many(path, len(patterns), MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS))
    for j, pattern in enumerate(patterns):
        pattern = pattern if isinstance(pattern, dict) else {}
        type_ = str(pattern.get("type") or "")
        errs += [e.invalid(f"{path}[{j}].type", type_, msg) for msg in is_qualified_name(type_)]
        status = pattern.get("status")
        if not status:
            valid = ", ".join(f'"{s}"' for s in CONDITION_STATUSES)
            errs.append(e.required(f"{path}[{j}].status", f"valid values: [{valid}]"))
        elif status not in CONDITION_STATUSES:
            errs.append(e.not_supported(f"{path}[{j}].status", status, CONDITION_STATUSES))
    return errs


def _validate_on_exit_codes(req: dict[str, Any], path: str, names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator")
    if not operator:
        valid = ", ".join(f'"{o}"' for o in ON_EXIT_CODES_OPERATORS)
        errs.append(e.required(f"{path}.operator", f"valid values: [{valid}]"))
    elif operator not in ON_EXIT_CODES_OPERATORS:
        errs.append(e.not_supported(f"{path}.operator", operator, ON_EXIT_CODES_OPERATORS))
    container = req.get("containerName")
    if container is not None and container not in names:
        errs.append(e.invalid(f"{path}.containerName", container,
                              "must be one of the container or initContainer names in the pod template"))  # fmt: skip
    raw = req.get("values")
    values: list[Any] = raw if isinstance(raw, list) else []
    if not values:
        errs.append(e.invalid(f"{path}.values", _GoInt32s(values), "at least one value is required"))
    elif len(values) > MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES:
        errs.append(e.too_many(f"{path}.values", len(values), MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES))
    seen: set[Any] = set()
    ordered = True
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            errs.append(e.invalid(f"{path}.values[{j}]", value, "must not be 0 for the In operator"))
        if value in seen:
            errs.append(e.duplicate(f"{path}.values[{j}]", value))
        seen.add(value)
        if j > 0 and _int(values[j - 1]) is not None and _int(value) is not None and values[j - 1] > value:
            ordered = False
    if not ordered:
        errs.append(e.invalid(f"{path}.values", _GoInt32s(values), "must be ordered"))
    return errs


def _validate_success_policy(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec["successPolicy"]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    rules = rules if isinstance(rules, list) else []
    if not rules:
        errs.append(
            e.required(f"{path}.rules", "at least one rules must be specified when the successPolicy is specified")
        )
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        errs.append(e.too_many(f"{path}.rules", len(rules), MAX_SUCCESS_POLICY_RULES))
    completions = _int(spec.get("completions")) or 0
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        rpath = f"{path}.rules[{i}]"
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        if indexes is None and count is None:
            errs.append(e.required(rpath, "at least one of succeededCount or succeededIndexes must be specified"))
        total = 0
        if indexes is not None:
            if len(str(indexes)) > MAX_SUCCESS_POLICY_SUCCEEDED_INDEXES_LENGTH:
                errs.append(e.too_long(f"{rpath}.succeededIndexes", MAX_SUCCESS_POLICY_SUCCEEDED_INDEXES_LENGTH))
            try:
                total = validate_indexes_format(str(indexes), completions)
            except ValueError as err:
                errs.append(e.invalid(f"{rpath}.succeededIndexes", indexes, f"error parsing succeededIndexes: {err}"))
        if count is not None:
            _nonnegative(errs, f"{rpath}.succeededCount", count)
            if _int(count) is not None and count > completions:
                errs.append(e.invalid(f"{rpath}.succeededCount", count,
                                      f"must be less than or equal to {completions} (the number of specified "
                                      "completions)"))  # fmt: skip
            if indexes is not None and _int(count) is not None and count > total:
                errs.append(e.invalid(f"{rpath}.succeededCount", count,
                                      f"must be less than or equal to {total} (the number of indexes in the "
                                      "specified succeededIndexes field)"))  # fmt: skip
    return errs


def validate_job_spec_policies_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """What ValidateJobSpecUpdate keeps immutable of these: podFailurePolicy, backoffLimitPerIndex and
    successPolicy."""
    errs: list[FieldError] = []
    for key in ("podFailurePolicy", "backoffLimitPerIndex", "successPolicy"):
        errs += immutable(new.get(key), old.get(key), f"spec.{key}")
    return errs
