"""The string formats a custom resource's values are checked against: only those the Kubernetes format
registry knows (upstream: apiextensions-apiserver pkg/apiserver/validation/formats.go, checked as
kube-openapi pkg/validation/strfmt and the govalidator functions it calls); any other `format` is ignored.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# Formats that survive upstream's StripUnsupportedFormatsPostProcess, by normalized name (dashes removed).
SUPPORTED = frozenset(
    (
        "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4",
        "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password",
        "date", "duration", "datetime",
    )
)  # fmt: skip


def normalize(name: str) -> str:
    return name.replace("-", "")


def checker(fmt: str) -> Callable[[str], bool] | None:
    """The check for a supported format name (any spelling that normalizes to it), else None."""
    return _CHECKS.get(normalize(fmt)) if normalize(fmt) in SUPPORTED else None


# --- IP addresses, CIDRs and MACs (Go's net parsers; "sloppy" IPv4 accepts leading zeros) ---------------


def _ipv4(s: str, sloppy: bool) -> bool:
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p or not p.isascii() or not p.isdigit():
            return False
        if not sloppy and len(p) > 1 and p[0] == "0":
            return False
        if int(p) > 255:
            return False
    return True


def _ipv6(s: str, sloppy: bool) -> bool:
    if s.count("::") > 1:
        return False
    halves = s.split("::")
    groups = 0
    for h, half in enumerate(halves):
        if not half:
            continue
        fields = half.split(":")
        for i, f in enumerate(fields):
            last = h == len(halves) - 1 and i == len(fields) - 1
            if "." in f and last:
                if not _ipv4(f, sloppy):
                    return False
                groups += 2
                continue
            if not 1 <= len(f) <= 4 or any(c not in "0123456789abcdefABCDEF" for c in f):
                return False
            groups += 1
    return groups < 8 if len(halves) == 2 else groups == 8


def _parse_ip(s: str, sloppy: bool) -> bool:
    # Go decides by whichever of '.' and ':' comes first.
    for ch in s:
        if ch == ".":
            return _ipv4(s, sloppy)
        if ch == ":":
            return _ipv6(s, sloppy)
    return False


def is_ipv4(s: str) -> bool:
    return _parse_ip(s, True) and "." in s


def is_ipv6(s: str) -> bool:
    return _parse_ip(s, False) and ":" in s


def is_cidr(s: str) -> bool:
    addr, sep, mask = s.partition("/")
    if not sep or not mask.isascii() or not mask.isdigit() or not _parse_ip(addr, True):
        return False
    bits = 32 if _ipv4(addr, True) else 128
    return int(mask) <= bits


_HEX = frozenset("0123456789abcdefABCDEF")


def is_mac(s: str) -> bool:
    if len(s) < 14:
        return False
    if s[2] in ":-":
        if (len(s) + 1) % 3 != 0 or (len(s) + 1) // 3 not in (6, 8, 20):
            return False
        sep = s[2]
        return all(
            s[i] in _HEX and s[i + 1] in _HEX and (i + 2 == len(s) or s[i + 2] == sep) for i in range(0, len(s), 3)
        )
    if s[4] == ".":
        if (len(s) + 1) % 5 != 0 or 2 * (len(s) + 1) // 5 not in (6, 8, 20):
            return False
        return all(
            all(c in _HEX for c in s[i : i + 4]) and (i + 4 == len(s) or s[i + 4] == ".") for i in range(0, len(s), 5)
        )
    return False


# --- URIs (Go's url.ParseRequestURI) and e-mail addresses (net/mail.ParseAddress) ------------------------

_USERINFO_OK = frozenset("-._:~!$&'()*+,;=%@")
_HOST_OK = frozenset("-_.~!$&'()*+,;=:[]<>\"")
_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _scheme(s: str) -> tuple[str, str] | None:
    for i, c in enumerate(s):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", s
            continue
        if c == ":":
            return None if i == 0 else (s[:i], s[i + 1 :])
        return "", s
    return "", s


def _host_ok(host: str) -> bool:
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return False
        port = host[end + 1 :]
        if port and not (port[0] == ":" and port[1:].isascii() and (port[1:].isdigit() or port[1:] == "")):
            return False
        host = host[1:end]
    else:
        colon = host.rfind(":")
        if colon >= 0:
            port = host[colon + 1 :]
            if port and not (port.isascii() and port.isdigit()):
                return False
    if _ESCAPE.search(host):
        return False
    # in a host only escapes of non-ASCII bytes, and %25, may appear
    if any(m.group(1)[0] < "8" and m.group(1) != "25" for m in _HOST_ESCAPE.finditer(host)):
        return False
    return all(not c.isascii() or c.isalnum() or c in _HOST_OK or c == "%" for c in host)


def is_request_uri(s: str) -> bool:
    if not s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return False
    if s == "*":
        return True
    split = _scheme(s)
    if split is None:
        return False
    scheme, rest = split
    if rest.endswith("?") and rest.count("?") == 1:
        rest = rest[:-1]
    else:
        rest = rest.partition("?")[0]
    if not rest.startswith("/"):
        return bool(scheme)  # a rootless path after a scheme is opaque; without one it is no request URI
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        userinfo, at, host = authority.rpartition("@")
        if at and not all(c.isascii() and (c.isalnum() or c in _USERINFO_OK) for c in userinfo):
            return False
        if not _host_ok(host):
            return False
    return not _ESCAPE.search(rest)


_ATEXT_SPECIALS = frozenset('()<>[]:;@\\,"')


def _atom(s: str, i: int, dot: bool) -> int:
    """The end of an atom (dot-atom when `dot`) starting at i, or i when there is none."""
    j = i
    while j < len(s):
        c = s[j]
        if c == "." and dot:
            j += 1
            continue
        if c in _ATEXT_SPECIALS or c == "." or not ("!" <= c <= "~" or ord(c) >= 0x80):
            break
        j += 1
    return j


def _quoted(s: str, i: int) -> int:
    """The end of a quoted string starting at s[i] == '"', or -1."""
    j = i + 1
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == '"':
            return j + 1
        j += 1
    return -1


def _addr_spec(s: str, i: int) -> int:
    """The end of `local@domain` starting at i, or -1."""
    if i < len(s) and s[i] == '"':
        j = _quoted(s, i)
    else:
        j = _atom(s, i, True)
        local = s[i:j]
        if not local or ".." in local or local.startswith(".") or local.endswith("."):
            return -1
    if j < 0 or j >= len(s) or s[j] != "@":
        return -1
    k = _atom(s, j + 1, True)
    domain = s[j + 1 : k]
    if not domain or ".." in domain or domain.startswith(".") or domain.endswith("."):
        return -1
    return k


def is_email(s: str) -> bool:
    s = s.strip(" \t")
    end = _addr_spec(s, 0)
    if end == len(s):
        return True
    lt = s.find("<")
    if lt < 0 or not s.endswith(">"):
        return False
    name = s[:lt].strip(" \t")
    i = 0
    while i < len(name):  # the display name: words (atoms or quoted strings) and spaces
        if name[i] in " \t":
            i += 1
        elif name[i] == '"':
            i = _quoted(name, i)
            if i < 0:
                return False
        else:
            j = _atom(name, i, True)
            if j == i:
                return False
            i = j
    return _addr_spec(s, lt + 1) == len(s) - 1


# --- hostnames (kube-openapi's HostnamePattern, whose \p{S}\p{L} Python's re cannot spell) ------------------


def _label_char(c: str) -> bool:
    return ("0" <= c <= "9") or unicodedata.category(c)[0] in "LS"


def _tld_char(c: str) -> bool:
    return unicodedata.category(c)[0] == "L"


def is_hostname(s: str) -> bool:
    if not s or len(s.encode()) > 255:
        return False
    parts = s.split(".")
    if any(len(p.encode()) > 63 for p in parts):
        return False
    if len(parts) == 1:
        rest = s[1:]
        if rest.startswith("-"):
            rest = rest[1:]
        return _label_char(s[0]) and len(rest) <= 62 and all(_label_char(c) for c in rest)
    *labels, tld = parts
    if not 2 <= len(tld) <= 63 or not all(_tld_char(c) for c in tld):
        return False
    for label in labels:
        if not label or len(label) > 63 or not _label_char(label[0]) or not _label_char(label[-1]):
            return False
        if not all(_label_char(c) or c == "-" for c in label):
            return False
    return True


# --- dates, times and durations ------------------------------------------------------------------------

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date(s: str) -> bool:
    m = _DATE.match(s)
    if not m:
        return False
    year, month, day = (int(g) for g in m.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= (29 if month == 2 and leap else _DAYS[month - 1])


def is_date_time(s: str) -> bool:
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return bool(m) and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


_GO_UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
_GO_UNITS["h"] = 3600 * 10**9


def _go_parse_duration(s: str) -> bool:
    """Whether Go's time.ParseDuration accepts s."""
    neg = s[:1] == "-"
    if s[:1] in ("-", "+"):
        s = s[1:]
    if s == "0":
        return True
    if not s:
        return False
    total = 0
    i = 0
    while i < len(s):
        start = i
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        whole = s[start:i]
        frac = ""
        if i < len(s) and s[i] == ".":
            i += 1
            fstart = i
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
            frac = s[fstart:i]
        if not whole and not frac:
            return False
        ustart = i
        while i < len(s) and s[i] != "." and not "0" <= s[i] <= "9":
            i += 1
        unit = _GO_UNITS.get(s[ustart:i])
        if unit is None:
            return False
        total += int(whole or "0") * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)
        if total > (1 << 63) - (0 if neg else 1):
            return False
    return True


_DURATION_PART = re.compile(r"(([0-9]+)[\t\n\f\r ]*([A-Za-z\u00b5]+))")
_UNIT_WORDS = (("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
               ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))  # fmt: skip


def is_duration(s: str) -> bool:
    if _go_parse_duration(s):
        return True
    ok = False
    for m in _DURATION_PART.finditer(s):
        if int(m.group(2)) > (1 << 63) - 1:
            return False  # strconv.Atoi fails, and so does the whole parse
        unit = m.group(3).strip().lower()
        for words in _UNIT_WORDS:
            if unit.startswith(words[-1]) or unit in words:
                ok = True
    return ok


# --- the rest: patterns and checksums (govalidator) --------------------------------------------------------

_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID3 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID4 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_UUID5 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_ISBN10 = re.compile(r"(?:[0-9]{9}X|[0-9]{10})\Z")
_ISBN13 = re.compile(r"[0-9]{13}\Z")
_SPACES_MINUS = re.compile(r"[\t\n\f\r -]+")
_CREDIT_CARD = re.compile(
    r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})\Z"
)
_SSN = re.compile(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}\Z")
_HEXCOLOR = re.compile(r"#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_BYTE = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])"
_RGBCOLOR = re.compile(
    rf"rgb\([\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*,[\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*,[\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*\)\Z"
)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z")
_BSON_ID = re.compile(r"[0-9a-fA-F]{24}\Z")


def is_isbn10(s: str) -> bool:
    s = _SPACES_MINUS.sub("", s)
    if not _ISBN10.match(s):
        return False
    total = sum((i + 1) * int(s[i]) for i in range(9)) + (100 if s[9] == "X" else 10 * int(s[9]))
    return total % 11 == 0


def is_isbn13(s: str) -> bool:
    s = _SPACES_MINUS.sub("", s)
    if not _ISBN13.match(s):
        return False
    total = sum((1, 3)[i % 2] * int(s[i]) for i in range(12))
    return int(s[12]) - (10 - total % 10) % 10 == 0


def is_credit_card(s: str) -> bool:
    digits = re.sub(r"[^0-9]+", "", s)
    if not _CREDIT_CARD.match(digits):
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            d = d % 10 + 1 if d >= 10 else d
        total += d
    return total % 10 == 0


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON_ID.match(s)),
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": is_mac,
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID3.match(s)),
    "uuid4": lambda s: bool(_UUID4.match(s)),
    "uuid5": lambda s: bool(_UUID5.match(s)),
    "isbn": lambda s: is_isbn10(s) or is_isbn13(s),
    "isbn10": is_isbn10,
    "isbn13": is_isbn13,
    "creditcard": is_credit_card,
    "ssn": lambda s: len(s) == 11 and bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": lambda s: bool(_BASE64.match(s)),
    "password": lambda s: True,
    "date": is_date,
    "duration": is_duration,
    "datetime": is_date_time,
}
