"""A webhook's matchConditions: CEL expressions over the request that must all be true for the webhook to be
called (upstream: apiserver pkg/admission/plugin/webhook/matchconditions/matcher.go).

The expressions see `object`, `oldObject` (in the version the webhook asked for), `request` (the
AdmissionRequest without its objects) and `authorizer` / `authorizer.requestResource`, compiled and costed as
ValidatingAdmissionPolicy's are (pyk8s.apiserver.admission.policy.compile), with the match-condition budget.
A false condition skips the webhook whatever else happened; errors otherwise follow the failurePolicy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....api import errors
from ....cel.environment import CompileError, EvalError, Program
from ..policy.compile import (
    BOOL_RESULT,
    RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS,
    Compiler,
    Context,
    OutOfBudget,
    evaluation_error,
)


@dataclass
class _Condition:
    name: str
    source: str
    program: Program | None
    error: str


@dataclass(frozen=True)
class MatchResult:
    matches: bool
    error: str = ""  # set when the conditions could not be evaluated and the failurePolicy is Fail


class MatchConditions:
    """One webhook's conditions, compiled once."""

    def __init__(self, conditions: list[Any], failure_policy: str) -> None:
        self.failure_policy = failure_policy
        compiler = Compiler(has_params=False)
        self.conditions: list[_Condition] = []
        for c in conditions:
            c = c if isinstance(c, dict) else {}
            source = str(c.get("expression") or "")
            try:
                self.conditions.append(_Condition(str(c.get("name") or ""), source,
                                                  compiler.compile(source, BOOL_RESULT), ""))  # fmt: skip
            except CompileError as err:
                self.conditions.append(_Condition(str(c.get("name") or ""), source, None, err.detail))

    def match(self, values: dict[str, Any]) -> MatchResult:
        ctx = Context(values, budget=RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS)
        problems: list[str] = []
        for c in self.conditions:
            if c.program is None:
                problems.append(f"compilation error: {c.error}")
                continue
            try:
                result = ctx.evaluate(c.program)
            except EvalError as err:
                problems.append(evaluation_error(c.source, err))
                continue
            except OutOfBudget as err:
                problems.append(str(err))
                break
            if result is False:
                return MatchResult(False)
        if problems:
            if self.failure_policy == "Ignore":
                return MatchResult(False)
            return MatchResult(False, errors.aggregate(problems))
        return MatchResult(True)
