"""Cron schedules as the CronJob controller reads them (upstream: robfig/cron v3's ParseStandard): five fields
(minute, hour, day of month, month, day of week) with `*`, `?`, ranges `a-b`, steps `/n`, lists `a,b` and month
and weekday names; the descriptors `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`;
and `@every <Go duration>`. As robfig's, when both day fields are restricted a day matching either counts, and
when one is `*` both must match. Times are evaluated in the schedule's time zone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

_MONTHS = {n: i + 1 for i, n in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {n: i for i, n in enumerate("sun mon tue wed thu fri sat".split())}
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}  # fmt: skip
_BOUNDS = [(0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS)]


class ScheduleError(ValueError):
    """A schedule robfig/cron would not parse."""


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    dom: frozenset[int]
    months: frozenset[int]
    dow: frozenset[int]
    dom_star: bool
    dow_star: bool
    every: dt.timedelta | None = None  # `@every`: a fixed interval instead of fields

    def _day_matches(self, t: dt.datetime) -> bool:
        dom_ok = t.day in self.dom
        dow_ok = (t.isoweekday() % 7) in self.dow
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def next(self, after: dt.datetime, tz: dt.tzinfo) -> dt.datetime | None:
        """The first time strictly after `after` that the schedule names (None within five years: never)."""
        if self.every is not None:
            step = max(self.every, dt.timedelta(seconds=1))
            return after.replace(microsecond=0) + step
        t = after.astimezone(tz).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        limit = t + dt.timedelta(days=366 * 5)
        while t < limit:
            if t.month not in self.months:
                month = t.month + 1
                t = t.replace(year=t.year + (month > 12), month=(month - 1) % 12 + 1, day=1, hour=0, minute=0)
                continue
            if not self._day_matches(t):
                t = (t + dt.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if t.hour not in self.hours:
                t = (t + dt.timedelta(hours=1)).replace(minute=0)
                continue
            if t.minute not in self.minutes:
                t += dt.timedelta(minutes=1)
                continue
            return t
        return None


def _number(text: str, names: dict[str, int]) -> int:
    low = text.lower()
    if low in names:
        return names[low]
    if not text.isdigit():
        raise ScheduleError(f"failed to parse int from {text}: strconv.Atoi: parsing {text!r}: invalid syntax")
    return int(text)


def _field(expr: str, lo: int, hi: int, names: dict[str, int]) -> tuple[set[int], bool]:
    out: set[int] = set()
    star = False
    for part in expr.split(","):
        rng, _, step_text = part.partition("/")
        step = 1
        if step_text:
            step = _number(step_text, {})
        if rng in ("*", "?"):
            start, end = lo, hi
            star = star or step == 1
        else:
            a, dash, b = rng.partition("-")
            start = _number(a, names)
            end = _number(b, names) if dash else (hi if step_text else start)
        if start < lo:
            raise ScheduleError(f"beginning of range ({start}) below minimum ({lo}): {part}")
        if end > hi:
            raise ScheduleError(f"end of range ({end}) above maximum ({hi}): {part}")
        if start > end:
            raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {part}")
        if step == 0:
            raise ScheduleError(f"step of range should be a positive number: {part}")
        out.update(range(start, end + 1, step))
    return out, star


def parse(schedule: str) -> Schedule:
    text = schedule.strip()
    if text.startswith("@every "):
        from ...api.duration import parse_go_duration

        try:
            nanos = parse_go_duration(text[len("@every ") :].strip())
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {text}: {err}") from None
        every = dt.timedelta(microseconds=nanos // 1000)
        return Schedule(frozenset(), frozenset(), frozenset(), frozenset(), frozenset(), True, True, every)
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {schedule}")
    parsed = [_field(f, lo, hi, names) for f, (lo, hi, names) in zip(fields, _BOUNDS, strict=True)]
    (mins, _), (hours, _), (dom, dom_star), (months, _), (dow, dow_star) = parsed
    return Schedule(frozenset(mins), frozenset(hours), frozenset(dom), frozenset(months),
                    frozenset(d % 7 for d in dow), dom_star, dow_star)  # fmt: skip
