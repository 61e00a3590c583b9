"""The options `pods/log` passes on to the kubelet, decoded from the request as the API server does."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.pod_log import kubelet_query, log_options


@pytest.mark.parametrize(
    ("since_time", "sent"),
    [
        ("2026-01-02T03:04:05+01:00", "2026-01-02T02%3A04%3A05Z"),
        # UTC moves these out of years 1-9999: passed on in Go's form, where a datetime cannot go.
        ("9999-12-31T23:59:59-23:59", "10000-01-01T23%3A58%3A59Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00%3A00%3A00Z"),
    ],
)
def test_since_time_is_passed_on_in_utc(since_time: str, sent: str) -> None:
    _, opts, _ = log_options({"sinceTime": since_time}, "p")
    assert kubelet_query(opts) == f"sinceTime={sent}"
