"""The API's timestamp strings: `metav1.MicroTime` of now, formatted from a cached second."""

from __future__ import annotations

import datetime as dt
import re

from pyk8s.api.meta import parse_time, rfc3339_micro


def test_micro_time_now_is_rfc3339_with_microseconds_and_in_order():
    stamps = [rfc3339_micro() for _ in range(20000)]  # spans second boundaries now and then
    for s in stamps[:100] + stamps[-100:]:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s), s
    times = [parse_time(s) for s in stamps]
    assert times == sorted(times)
    assert abs((dt.datetime.now(dt.UTC) - times[-1]).total_seconds()) < 5


def test_micro_time_of_a_given_instant():
    t = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert rfc3339_micro(t) == "2026-01-02T01:04:05.000006Z"
