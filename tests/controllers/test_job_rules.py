"""The Job controller's rules without a server: interval strings of completed and failed indexes, successPolicy
rules (property-tested against a plain reading of the API docs), per-index failure counts and which failed pod
waits for its replacement, the back-off (per Job and per index), the FailIndex action, and how one sync sorts
pods when the Job has an outcome (upstream: indexed_job_utils_test.go, success_policy_test.go,
backoff_utils_test.go, pod_failure_policy_test.go)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyk8s.apiserver.registry.batch_validation import validate_indexes_format
from pyk8s.controllers.job.backoff_utils import (
    BackoffRecord,
    indexes_ready_to_create,
    new_backoff_record,
    remaining_time,
    remaining_time_per_index,
)
from pyk8s.controllers.job.indexed_job_utils import (
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    failed_indexes,
    first_pending_indexes,
    format_indexes,
    is_index_failed,
    new_index_failure_counts,
    parse_indexes,
    pods_with_delayed_deletion,
)
from pyk8s.controllers.job.pod_failure_policy import match_pod_failure_policy
from pyk8s.controllers.job.success_policy import match_success_policy
from pyk8s.controllers.job.tracking_utils import TRACKING_FINALIZER, count_pods, count_rest

NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def at(seconds: float) -> str:
    return (NOW + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, index: int | None = None, phase: str = "Running", *, failures: int | None = None,
        ignored: int | None = None, finished: float | None = None, exit_code: int = 1,
        tracked: bool = True, deleted: bool = False) -> dict[str, Any]:  # fmt: skip
    ann: dict[str, str] = {}
    if index is not None:
        ann["batch.kubernetes.io/job-completion-index"] = str(index)
    if failures is not None:
        ann[INDEX_FAILURE_COUNT_ANNOTATION] = str(failures)
    if ignored is not None:
        ann[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
    md: dict[str, Any] = {"name": name, "namespace": "ns", "uid": name, "annotations": ann}
    md |= {"creationTimestamp": at(-100), "finalizers": [TRACKING_FINALIZER] if tracked else []}
    if deleted:
        md["deletionTimestamp"] = at(-1)
    status: dict[str, Any] = {"phase": phase}
    if finished is not None:
        status["containerStatuses"] = [{"name": "c", "state": {"terminated": {
            "exitCode": 0 if phase == "Succeeded" else exit_code, "finishedAt": at(finished)}}}]  # fmt: skip
    return {"metadata": md, "status": status}


def indexed(completions: int, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns"},
            "spec": {"completionMode": "Indexed", "completions": completions, "parallelism": completions, **spec},
            "status": status or {}}  # fmt: skip


# -- interval strings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("indexes", "text"),
    [([], ""), ([3], "3"), ([0, 1], "0,1"), ([0, 1, 2], "0-2"), ([1, 2, 4, 5, 6, 9], "1,2,4-6,9"), ([7, 0], "0,7")],
)
def test_indexes_are_written_as_upstream_writes_them(indexes, text):
    # Two in a row are written apart (upstream's orderedIntervals.String), three or more as a range.
    assert format_indexes(indexes) == text


@given(st.sets(st.integers(min_value=0, max_value=200)))
def test_index_strings_round_trip_and_pass_validation(indexes):
    text = format_indexes(indexes)
    assert parse_indexes(text, 201) == indexes
    assert validate_indexes_format(text, 201) == len(indexes)


def test_parsing_drops_indexes_beyond_completions_and_garbage():
    assert parse_indexes("0,2-5,x,9", 4) == {0, 2, 3}


def test_pending_indexes_skip_busy_and_done_ones():
    assert first_pending_indexes({1}, {0, 3}, 3, 6) == [2, 4, 5]
    assert first_pending_indexes(set(), set(), 2, 1) == [0]


# -- successPolicy -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "succeeded", "want"),
    [
        ([{"succeededIndexes": "0-2"}], {0, 1}, None),
        ([{"succeededIndexes": "0-2"}], {0, 1, 2, 5}, "Matched rules at index 0"),
        ([{"succeededIndexes": "0-2", "succeededCount": 2}], {0, 2}, "Matched rules at index 0"),
        ([{"succeededIndexes": "0-2", "succeededCount": 2}], {0, 5, 6}, None),
        ([{"succeededCount": 1}, {"succeededIndexes": "0"}], {0}, "Matched rules at index 0"),
        ([{"succeededIndexes": "3"}, {"succeededCount": 2}], {0, 1}, "Matched rules at index 1"),
        ([{"succeededIndexes": "9"}, {"succeededCount": 1}], {0}, "Matched rules at index 1"),  # out of range: skipped
        ([{"succeededCount": 1}], set(), None),
    ],
)  # fmt: skip
def test_success_policy_rules(rules, succeeded, want):
    assert match_success_policy({"rules": rules}, 6, succeeded) == want


indexes_st = st.sets(st.integers(0, 7), min_size=1).map(format_indexes)
rule_st = st.one_of(
    st.fixed_dictionaries({"succeededCount": st.integers(0, 8)}),
    st.fixed_dictionaries({"succeededIndexes": indexes_st}),
    st.fixed_dictionaries({"succeededIndexes": indexes_st, "succeededCount": st.integers(0, 8)}),
)


@given(st.lists(rule_st, min_size=1, max_size=4), st.sets(st.integers(0, 7)))
def test_success_policy_is_the_first_rule_met(rules, succeeded):
    """A rule is met when its indexes all succeeded, or at least succeededCount of them; a count alone needs
    that many successes overall; the first rule met is named (the API docs' reading)."""

    def met(rule: dict[str, Any]) -> bool:
        if "succeededIndexes" in rule:
            mine = parse_indexes(rule["succeededIndexes"], 8) & succeeded
            return mine == parse_indexes(rule["succeededIndexes"], 8) or len(mine) >= rule.get("succeededCount", 99)
        return len(succeeded) >= rule["succeededCount"]

    first = next((i for i, r in enumerate(rules) if met(r)), None)
    want = None if first is None or not succeeded else f"Matched rules at index {first}"
    assert match_success_policy({"rules": rules}, 8, succeeded) == want


# -- per-index failures ----------------------------------------------------------------------------------------


def test_an_index_fails_once_its_failures_reach_the_limit():
    job = indexed(3, backoffLimitPerIndex=1)
    assert not is_index_failed(job, pod("a", 0, "Failed", failures=0))
    assert is_index_failed(job, pod("b", 0, "Failed", failures=1))
    assert not is_index_failed(job, pod("c", 0, "Running", failures=5))
    # A count that is not a number in int32's range reads as 0 (a user may write anything there).
    assert not is_index_failed(job, pod("d", 0, "Failed", failures=-3))


def test_fail_index_and_ignore_rules():
    rules = [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}},
             {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]  # fmt: skip
    job = indexed(3, backoffLimitPerIndex=5, podFailurePolicy={"rules": rules})
    failed_42 = pod("x", 0, "Failed", finished=0, exit_code=42)
    assert match_pod_failure_policy(job["spec"]["podFailurePolicy"], failed_42) == (None, True, "FailIndex")
    assert is_index_failed(job, pod("a", 0, "Failed", failures=0, finished=0, exit_code=42))
    ignored = pod("b", 0, "Failed", failures=5, finished=0, exit_code=7)
    assert not is_index_failed(job, ignored)  # an ignored failure never fails the index
    # Its replacement carries the count on unchanged, the ignored count one up.
    assert new_index_failure_counts(job, ignored) == (5, 1)
    assert new_index_failure_counts(job, pod("c", 0, "Failed", failures=2, ignored=3, finished=0)) == (3, 3)
    assert new_index_failure_counts(job, None) == (0, 0)


def test_failed_indexes_join_the_status():
    job = indexed(6, {"failedIndexes": "4"}, backoffLimitPerIndex=0)
    pods = [pod("a", 1, "Failed", failures=0), pod("b", 2, "Succeeded"), pod("c", 9, "Failed", failures=0)]
    assert failed_indexes(job, pods, 6) == {1, 4}


def test_the_latest_failed_pod_of_a_retrying_index_waits_for_its_replacement():
    job = indexed(4, backoffLimitPerIndex=3)
    older, newer = pod("a", 0, "Failed", failures=0, finished=-20), pod("b", 0, "Failed", failures=1, finished=-5)
    other = pod("c", 1, "Failed", failures=0, finished=-5)
    done = pod("d", 2, "Failed", failures=0, finished=-5)
    busy = pod("e", 3, "Failed", failures=0, finished=-5)
    delayed = pods_with_delayed_deletion(job, [older, newer, other, done, busy], {3}, {2}, 4)
    assert {i: p["metadata"]["name"] for i, p in delayed.items()} == {0: "b", 1: "c"}


# -- back-off ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failures", "since", "want"),
    [(0, 0, 0), (1, 0, 10), (1, 4, 6), (2, 0, 20), (3, 30, 10), (7, 0, 600), (60, 0, 600), (1, 11, 0)],
)
def test_the_back_off_doubles_to_ten_minutes(failures, since, want):
    last = NOW - dt.timedelta(seconds=since)
    assert remaining_time(failures, last, NOW) == want


def test_a_success_resets_the_jobs_back_off():
    rec = new_backoff_record(BackoffRecord(), [], [pod("a", phase="Failed", finished=-30)])
    assert rec.failures == 1 and rec.last_failure == NOW - dt.timedelta(seconds=30)
    failed = [pod("c", phase="Failed", finished=-25), pod("d", phase="Failed", finished=-10)]
    rec = new_backoff_record(rec, [pod("b", phase="Succeeded", finished=-20)], failed)
    assert rec == BackoffRecord(1, NOW - dt.timedelta(seconds=10))  # only the failure after the success counts
    assert new_backoff_record(rec, [pod("e", phase="Succeeded", finished=0)], []) == BackoffRecord()


def test_each_index_waits_out_its_own_back_off():
    # Index 0's last pod was its second failure (count 1 on it) 5 s ago: 20 s back-off, 15 s left.
    last = {0: pod("a", 0, "Failed", failures=1, finished=-5), 2: pod("b", 2, "Failed", failures=0, finished=-30)}
    assert remaining_time_per_index(last[0], NOW) == 15
    assert indexes_ready_to_create([0, 1, 2], last, NOW) == ([1, 2], 15)
    assert indexes_ready_to_create([0], last, NOW) == ([], 15)


# -- one sync's sorting of pods ---------------------------------------------------------------------------------


def test_a_failed_pod_of_a_retrying_index_is_held_until_the_job_ends():
    job = indexed(3, backoffLimitPerIndex=2)
    pods = [pod("a", 0, "Failed", failures=0, finished=-1), pod("b", 1, "Succeeded", finished=-1),
            pod("c", 2, "Running")]  # fmt: skip
    ctx = count_pods(job, pods, set())
    assert [p["metadata"]["name"] for p in ctx.held] == ["a"] and ctx.unc_failed == set()
    assert ctx.unc_ok == {"b"} and ctx.succeeded_idx == {1} and ctx.failed_idx == set()
    count_rest(job, ctx, failing=True)
    assert ctx.unc_failed == {"a", "c"}  # held, and still running when the Job failed


def test_pods_running_when_a_success_policy_is_met_go_uncounted():
    job = indexed(3, successPolicy={"rules": [{"succeededIndexes": "0"}]})
    ctx = count_pods(job, [pod("a", 0, "Succeeded", finished=-1), pod("b", 1), pod("c", 2)], set())
    count_rest(job, ctx, failing=False)
    assert (ctx.unc_ok, ctx.unc_failed, ctx.ignored) == ({"a"}, set(), {"b", "c"})


def test_pods_counted_or_let_go_are_not_sorted_again():
    job = indexed(2, {"uncountedTerminatedPods": {"failed": ["a"]}}, backoffLimitPerIndex=0)
    pods = [pod("a", 0, "Failed", failures=0), pod("b", 1, "Failed", failures=0), pod("c", 1, "Failed", tracked=False)]
    ctx = count_pods(job, pods, {"b"})
    assert (ctx.unc_failed, ctx.held, ctx.newly_failed) == ({"a"}, [], [])
    assert ctx.failed_idx == {0}  # a's index: a still has its finalizer
