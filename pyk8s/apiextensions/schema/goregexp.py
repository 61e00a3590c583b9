"""Whether a `pattern` compiles as a Go (RE2) regular expression, with Go's error text (upstream: Go's
regexp/syntax, as apiextensions-apiserver pkg/apiserver/schema/validation.go uses it for the `pattern` keyword).

Python's `re` accepts constructs RE2 refuses (look-arounds, back-references, possessive quantifiers, `\\Z`,
huge repeat counts) and refuses some RE2 accepts (`\\z`, `\\pL`, `\\Q..\\E`, `(?U)`, `(?<name>`): `check`
rejects the former with Go's words and rewrites the latter before asking `re` about the rest.
"""

from __future__ import annotations

import re
import warnings
from typing import NamedTuple

_MAX_REPEAT = 1000
# Letters Go accepts after a backslash outside a class (besides octal digits).
_GO_ESCAPE_LETTERS = set("afnrtvxpPdDsSwWbBAzQE")
_GO_FLAGS = set("imsU")
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


class _GoError(NamedTuple):
    code: str
    expr: str


def go_regexp_error(pattern: str) -> str | None:
    """`error parsing regexp: <code>: `<expr>`` when Go's regexp.Compile refuses `pattern`, else None."""
    found = _scan(pattern)
    if isinstance(found, _GoError):
        return f"error parsing regexp: {found.code}: `{found.expr}`"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(found)
        except re.error as exc:
            code, expr = _from_python(exc, found, pattern)
            return f"error parsing regexp: {code}: `{expr}`"
        except (OverflowError, RecursionError):
            return f"error parsing regexp: expression too large: `{pattern}`"
    return None


def _scan(p: str) -> str | _GoError:
    """The first RE2-only error as (code, expr), or the pattern rewritten for Python's `re`."""
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    last_repeat = ""  # the repetition operator just seen, for Go's nested-repetition error
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                return _GoError("trailing backslash at end of expression", "")
            d = p[i + 1]
            if d == "Q":  # literal text up to \E
                end = p.find("\\E", i + 2)
                text = p[i + 2 :] if end < 0 else p[i + 2 : end]
                out.append(re.escape(text))
                i = n if end < 0 else end + 2
                last_repeat = ""
                continue
            if d in "pP":
                m = re.match(r"\\[pP](\{[^}]*\}|.)", p[i:])
                out.append("\\w" if d == "p" else "\\W")
                i += len(m.group(0)) if m else 2
                last_repeat = ""
                continue
            if d == "x" and i + 2 < n and p[i + 2] == "{":
                end = p.find("}", i)
                out.append("\\x00")
                i = n if end < 0 else end + 1
                last_repeat = ""
                continue
            if d.isdigit() and d != "0" and not in_class and not (i + 2 < n and p[i + 2] in "01234567"):
                return _GoError("invalid escape sequence", p[i : i + 2])
            if d.isascii() and d.isalpha() and d not in _GO_ESCAPE_LETTERS and not in_class:
                return _GoError("invalid escape sequence", p[i : i + 2])
            out.append("\\Z" if d == "z" else p[i : i + 2])
            i += 2
            last_repeat = ""
            continue
        if in_class:
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            elif c == "[" and p.startswith("[:", i):
                end = p.find(":]", i + 2)
                if end > 0:  # a POSIX class: any stand-in set keeps Python's parse in step
                    out.append("\\w")
                    i = end + 2
                    continue
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            if p.startswith("[^", i):
                out.append("[^")
                i += 2
            else:
                out.append("[")
                i += 1
            last_repeat = ""
            continue
        if c == "(" and p.startswith("(?", i):
            rewritten = _group_opening(p, i)
            if isinstance(rewritten, _GoError):
                return rewritten
            text, consumed = rewritten
            out.append(text)
            i += consumed
            last_repeat = ""
            continue
        op = ""
        if c in "*+?":
            op = c
        elif c == "{":
            m = _REPEAT.match(p, i)
            if m:
                op = m.group(0)
                lo, hi = int(m.group(1)), m.group(3)
                if lo > _MAX_REPEAT or (hi and int(hi) > _MAX_REPEAT) or (hi and int(hi) < lo):
                    return _GoError("invalid repeat count", op)
        if op:
            if op == "?" and last_repeat and last_repeat[-1] != "?":  # a lazy marker, not a new operator
                last_repeat += "?"
            elif last_repeat:
                return _GoError("invalid nested repetition operator", last_repeat + op)
            else:
                last_repeat = op
            out.append(op)
            i += len(op)
            continue
        last_repeat = ""
        out.append(c)
        i += 1
    return "".join(out)


def _group_opening(p: str, i: int) -> tuple[str, int] | _GoError:
    """A `(?` group opening rewritten for Python as (text, consumed), or Go's error (code, expr)."""
    rest = p[i + 2 :]
    if rest.startswith("P<") or (rest.startswith("<") and not rest.startswith(("<=", "<!"))):
        start = i + (4 if rest.startswith("P<") else 3)
        end = p.find(">", start)
        name = p[start:end] if end >= 0 else ""
        if end < 0 or not name or not re.fullmatch(r"\w+", name):
            return _GoError("invalid named capture", p[i : end + 1 if end >= 0 else len(p)])
        return f"(?P<{name}>", end + 1 - i
    j = i + 2
    seen_minus = False
    flags: list[str] = []
    while j < len(p):
        c = p[j]
        if c in _GO_FLAGS:
            if c != "U":
                flags.append(c)
            j += 1
            continue
        if c == "-" and not seen_minus:
            seen_minus = True
            flags.append(c)
            j += 1
            continue
        if c in ":)":
            if (flags and flags[-1] == "-") or (seen_minus and flags == ["-"]):
                return _GoError("invalid or unsupported Perl syntax", p[i : j + 1])
            text = "".join(flags).rstrip("-")
            if c == ")":
                # A bare flag group applies to the rest of the expression; any group works as a stand-in.
                return ("(?:)" if not text else f"(?{text}:)"), j + 1 - i
            return (f"(?{text}:" if text else "(?:"), j + 1 - i
        break
    return _GoError("invalid or unsupported Perl syntax", p[i : min(j + 1, len(p))])


def _from_python(exc: re.error, translated: str, original: str) -> _GoError:
    msg = exc.msg
    pos = exc.pos if exc.pos is not None else 0
    if msg.startswith("missing ), unterminated subpattern"):
        return _GoError("missing closing )", original)
    if msg.startswith("unbalanced parenthesis"):
        return _GoError("unexpected )", original)
    if msg.startswith("unterminated character set"):
        return _GoError("missing closing ]", translated[pos:])
    if msg.startswith("nothing to repeat"):
        m = _REPEAT.match(translated, pos)
        return _GoError("missing argument to repetition operator", m.group(0) if m else translated[pos : pos + 1])
    if msg.startswith("multiple repeat"):
        return _GoError("invalid nested repetition operator", translated[max(pos - 1, 0) : pos + 1])
    if msg.startswith("bad escape"):
        return _GoError("invalid escape sequence", translated[pos : pos + 2])
    if msg.startswith("bad character range"):
        return _GoError("invalid character class range", msg.removeprefix("bad character range "))
    if "group name" in msg:
        return _GoError("invalid named capture", translated[pos:])
    return _GoError("invalid or unsupported Perl syntax", translated[pos : pos + 3])
