"""Go's time.Parse and Format for the two layouts the API uses: `metav1.Time` (RFC 3339, whole seconds) and
`metav1.MicroTime` (RFC 3339 with exactly six fractional digits).

A timestamp a client sends is read as Go reads it — the same accepted forms (offsets, fractional seconds
after whole seconds, a one-digit hour) and the same error messages (`parsing time "x" as "2006-01-02T15:04:05Z07:00":
cannot parse "x" as "2006"`) — and written back as upstream writes it: in UTC with `Z`, seconds or microseconds.
Times are kept as (seconds since the epoch, nanoseconds), so years 0000 to 9999 and any offset work without the
limits of `datetime`.
"""

from __future__ import annotations

import re

from .errors import go_quote

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


class GoTimeError(ValueError):
    """A timestamp Go's time.Parse rejects; the message is Go's."""


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    y -= m <= 2
    era = y // 400  # Python's // floors, which is what the algorithm's era needs
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


class _Bad(Exception):
    """Go's errBad for one layout element."""


def _getnum(value: str, fixed: bool) -> tuple[int, str]:
    # Go's getnum: one or two digits; two when the layout element is zero-padded.
    if not value[:1].isdigit() or not value[:1].isascii():
        raise _Bad
    if len(value) < 2 or not (value[1].isdigit() and value[1].isascii()):
        if fixed:
            raise _Bad
        return int(value[0]), value[1:]
    return int(value[:2]), value[2:]


def _is_digit(value: str, i: int) -> bool:
    return len(value) > i and "0" <= value[i] <= "9"


def _nanos(value: str, nbytes: int) -> int:
    # Go's parseNanoseconds: a '.' or ',' then digits, scaled to nanoseconds (at most nine are read).
    if value[0] not in ".,":
        raise _Bad
    digits = value[1 : min(nbytes, 10)]
    if not digits.isdigit() or not digits.isascii():
        raise _Bad
    return int(digits) * 10 ** (9 - len(digits))


def parse(value: str, layout: str = RFC3339) -> tuple[int, int]:
    """(Unix seconds, nanoseconds) of `value` read with `layout` (RFC3339 or RFC3339_MICRO), as Go's time.Parse."""
    micro = layout == RFC3339_MICRO
    rest = value

    def fail(elem: str, at: str) -> GoTimeError:
        return GoTimeError(
            f"parsing time {go_quote(value)} as {go_quote(layout)}: cannot parse {go_quote(at)} as {go_quote(elem)}"
        )

    def out_of_range(what: str) -> GoTimeError:
        return GoTimeError(f"parsing time {go_quote(value)}: {what} out of range")

    def literal(text: str) -> None:
        nonlocal rest
        if not rest.startswith(text):
            raise fail(text, rest)
        rest = rest[len(text) :]

    if len(rest) < 4 or not _is_digit(rest, 0) or not (rest[:4].isdigit() and rest[:4].isascii()):
        raise fail("2006", rest)
    year, rest = int(rest[:4]), rest[4:]
    nums: list[int] = []
    for sep, elem, fixed, hi, name in (
        ("-", "01", True, 12, "month"),
        ("-", "02", True, 31, "day"),
        ("T", "15", False, 23, "hour"),
        (":", "04", True, 59, "minute"),
        (":", "05", True, 59, "second"),
    ):
        literal(sep)
        hold = rest
        try:
            n, rest = _getnum(rest, fixed)
        except _Bad:
            raise fail(elem, hold) from None
        lo = 1 if name in ("month", "day") else 0
        if n < lo or n > hi:
            raise out_of_range(name)
        nums.append(n)
    month, day, hour, minute, second = nums
    nsec = 0
    if micro:
        hold = rest
        if len(rest) < 7:
            raise fail(".000000", hold)
        try:
            nsec = _nanos(rest, 7)
        except _Bad:
            raise fail(".000000", hold) from None
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and _is_digit(rest, 1):
        # A fractional second the layout does not ask for is accepted after the seconds.
        n = 2
        while _is_digit(rest, n):
            n += 1
        nsec = _nanos(rest, n)
        rest = rest[n:]
    offset = 0
    hold = rest
    if rest[:1] == "Z":
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-":
            raise fail("Z07:00", hold)
        try:
            hh, _ = _getnum(rest[1:3], True)
            mm, _ = _getnum(rest[4:6], True)
        except _Bad:
            raise fail("Z07:00", hold) from None
        if hh > 24:
            raise out_of_range("time zone offset hour")
        if mm > 60:
            raise out_of_range("time zone offset minute")
        offset = (hh * 60 + mm) * 60 * (1 if rest[0] == "+" else -1)
        rest = rest[6:]
    if rest:
        raise GoTimeError(f"parsing time {go_quote(value)}: extra text: {go_quote(rest)}")
    if day > _days_in(month, year):
        raise out_of_range("day")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    return seconds, nsec


def format_utc(seconds: int, nsec: int = 0, *, micro: bool = False) -> str:
    """Go's t.UTC().Format(RFC3339) (whole seconds), or with `micro` the RFC3339Micro form."""
    days, secs = divmod(seconds, 86400)
    y, m, d = _civil_from_days(days)
    hh, rem = divmod(secs, 3600)
    mi, ss = divmod(rem, 60)
    # Go writes the year zero-padded to four digits, a minus sign before a negative one.
    year = f"-{-y:04d}" if y < 0 else f"{y:04d}"
    frac = f".{nsec // 1000:06d}" if micro else ""
    return f"{year}-{m:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}{frac}Z"


# Timestamps already in the form upstream writes (UTC, `Z`, fields in range): most of what clients send, and
# everything the server writes itself. Only the day of the month can still be wrong (the 30th of February).
_NORMAL = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_NORMAL_TIME = re.compile(_NORMAL + "Z", re.ASCII)
_NORMAL_MICRO_TIME = re.compile(_NORMAL + r"\.[0-9]{6}Z", re.ASCII)


def _day_fits(value: str) -> bool:
    day = int(value[8:10])
    return day <= 28 or day <= _days_in(int(value[5:7]), int(value[0:4]))


def normalize_time(value: str) -> str:
    """A `metav1.Time` as upstream stores it: parsed as Go does, written in UTC with whole seconds."""
    if _NORMAL_TIME.fullmatch(value) and _day_fits(value):
        return value
    s, _ = parse(value, RFC3339)
    return format_utc(s)


def normalize_micro_time(value: str) -> str:
    """A `metav1.MicroTime` as upstream stores it: exactly six fractional digits, UTC."""
    if _NORMAL_MICRO_TIME.fullmatch(value) and _day_fits(value):
        return value
    s, ns = parse(value, RFC3339_MICRO)
    return format_utc(s, ns, micro=True)
