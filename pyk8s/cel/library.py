"""Kubernetes' CEL extension functions, declared for the CEL runtime (upstream: apiserver pkg/cel/library:
lists.go, regex.go, urls.go, quantity.go, ip.go, cidr.go; the strings v2, sets and optional libraries of cel-go's
ext package are the runtime's own, switched on by `RUNTIME_EXTENSIONS`).

Every function keeps upstream's name and overload id. Type parameters cannot be declared through the runtime's
Python binding, so list functions take `list(dyn)` and return `dyn` where upstream returns the element type:
a rule that sums strings compiles here and fails when evaluated, instead of failing to compile.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import re
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from ..apiextensions.schema.validation import _compile_pattern
from . import kubetypes as k
from .kubetypes import CELError

T = cel.Type
DYN, INT, BOOL, STRING, DOUBLE = T.DYN, T.INT, T.BOOL, T.STRING, T.DOUBLE
QUANTITY, URL, IP, CIDR = (T(f"{k.PACKAGE}.{n}") for n in k.TYPE_NAMES)
LIST_DYN = T.List(DYN)

# The cel-go ext libraries of Kubernetes' base environment that the runtime implements itself.
RUNTIME_EXTENSIONS = "extensions:\n  - name: strings\n    version: 2\n  - name: sets\n  - name: optional\n"
# cel.bind, which Kubernetes does not offer: only the optionalOldSelf wrapper (environment.py) uses it.
BINDINGS_EXTENSION = "  - name: bindings\n"

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# -- lists --------------------------------------------------------------------------------------------------------


def _comparable(values: list[Any]) -> list[Any]:
    kinds = {_kind(v) for v in values}
    if len(kinds) > 1 and not kinds <= {"int", "float"}:
        raise CELError("no such overload")
    if kinds & {"list", "dict", "none", "message"}:
        raise CELError("no such overload")
    return values


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "int" if isinstance(v, int) else "float"
    if isinstance(v, str | bytes | datetime.datetime | datetime.timedelta):
        return type(v).__name__
    if v is None:
        return "none"
    return "list" if isinstance(v, list) else "dict" if isinstance(v, dict) else "message"


def is_sorted(values: list[Any]) -> bool:
    _comparable(values)
    return all(not (a > b) for a, b in itertools.pairwise(values))


def list_sum(values: list[Any]) -> Any:
    kinds = {_kind(v) for v in values}
    if len(kinds) > 1 or kinds & {"bool", "str", "bytes", "datetime", "list", "dict", "none", "message"}:
        raise CELError("no such overload")
    if not values:
        return 0
    total = values[0]
    for v in values[1:]:
        total = total + v
        if isinstance(total, int) and not _INT64_MIN <= total <= _INT64_MAX:
            raise CELError("integer overflow")
    return total


def _extreme(name: str, values: list[Any], pick: Callable[[Any, Any], bool]) -> Any:
    if not values:
        raise CELError(f"{name} called on empty list")
    _comparable(values)
    best = values[0]
    for v in values[1:]:
        if pick(v, best):
            best = v
    return best


def list_min(values: list[Any]) -> Any:
    return _extreme("min", values, lambda v, best: v < best)


def list_max(values: list[Any]) -> Any:
    return _extreme("max", values, lambda v, best: v > best)


def _same(a: Any, b: Any) -> bool:
    # CEL equality: numbers compare across int and double, but a bool is never a number.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def list_index_of(values: list[Any], item: Any) -> int:
    for i, v in enumerate(values):
        if _same(v, item):
            return i
    return -1


def list_last_index_of(values: list[Any], item: Any) -> int:
    for i in range(len(values) - 1, -1, -1):
        if _same(values[i], item):
            return i
    return -1


# -- regex --------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    compiled, error = _compile_pattern(pattern)
    if compiled is None:
        raise CELError(f"Illegal regex: {error or 'error parsing regexp: unsupported expression'}")
    return compiled


def find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    """Go's FindAllString: an empty match right after the previous match is skipped."""
    if n == 0:
        return []
    out: list[str] = []
    last_end = -1
    for m in _regex(pattern).finditer(s):
        if m.start() == m.end() == last_end:
            continue
        out.append(m.group(0))
        last_end = m.end()
        if 0 < n <= len(out):
            break
    return out


# -- declarations -------------------------------------------------------------------------------------------------


def _member(overload: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, ret, params, is_member=True, impl=impl)


def _global(overload: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(overload, ret, params, impl=impl)


def _declarations() -> list[Any]:
    fd = cel.FunctionDecl
    return [
        # lists
        fd("isSorted", [_member("list_is_sorted_bool", BOOL, [LIST_DYN], is_sorted)]),
        fd("sum", [_member("list_sum", DYN, [LIST_DYN], list_sum)]),
        fd("min", [_member("list_min", DYN, [LIST_DYN], list_min)]),
        fd("max", [_member("list_max", DYN, [LIST_DYN], list_max)]),
        fd("indexOf", [_member("list_a_index_of_int", INT, [LIST_DYN, DYN], list_index_of)]),
        fd("lastIndexOf", [_member("list_a_last_index_of_int", INT, [LIST_DYN, DYN], list_last_index_of)]),
        # regex
        fd("find", [_member("string_find_string", STRING, [STRING, STRING], find)]),
        fd(
            "findAll",
            [
                _member("string_find_all_string", T.List(STRING), [STRING, STRING], find_all),
                _member("string_find_all_string_int", T.List(STRING), [STRING, STRING, INT], find_all),
            ],
        ),
        # urls
        fd("url", [_global("string_to_url", URL, [STRING], k.url)]),
        fd("isURL", [_global("is_url_string", BOOL, [STRING], k.is_url)]),
        fd("getScheme", [_member("url_get_scheme", STRING, [URL], k.url_scheme)]),
        fd("getHost", [_member("url_get_host", STRING, [URL], k.url_host)]),
        fd("getHostname", [_member("url_get_hostname", STRING, [URL], k.url_hostname)]),
        fd("getPort", [_member("url_get_port", STRING, [URL], k.url_port)]),
        fd("getEscapedPath", [_member("url_get_escaped_path", STRING, [URL], k.url_escaped_path)]),
        fd("getQuery", [_member("url_get_query", T.Map(STRING, T.List(STRING)), [URL], k.url_query)]),
        # quantity
        fd("quantity", [_global("string_to_quantity", QUANTITY, [STRING], k.quantity)]),
        fd("isQuantity", [_global("is_quantity_string", BOOL, [STRING], k.is_quantity)]),
        fd("sign", [_global("quantity_sign", INT, [QUANTITY], k.quantity_sign)]),
        fd(
            "isGreaterThan",
            [
                _member(
                    "quantity_is_greater_than", BOOL, [QUANTITY, QUANTITY], lambda a, b: k.quantity_compare(a, b) > 0
                )
            ],
        ),
        fd(
            "isLessThan",
            [_member("quantity_is_less_than", BOOL, [QUANTITY, QUANTITY], lambda a, b: k.quantity_compare(a, b) < 0)],
        ),
        fd("compareTo", [_member("quantity_compare_to", INT, [QUANTITY, QUANTITY], k.quantity_compare)]),
        fd("asApproximateFloat", [_member("quantity_get_float", DOUBLE, [QUANTITY], k.quantity_as_float)]),
        fd("asInteger", [_member("quantity_get_int", INT, [QUANTITY], k.quantity_as_integer)]),
        fd("isInteger", [_member("quantity_is_integer", BOOL, [QUANTITY], k.quantity_is_integer)]),
        fd(
            "add",
            [
                _member("quantity_add", QUANTITY, [QUANTITY, QUANTITY], k.quantity_add),
                _member("quantity_add_int", QUANTITY, [QUANTITY, INT], k.quantity_add),
            ],
        ),
        fd(
            "sub",
            [
                _member("quantity_sub", QUANTITY, [QUANTITY, QUANTITY], k.quantity_sub),
                _member("quantity_sub_int", QUANTITY, [QUANTITY, INT], k.quantity_sub),
            ],
        ),
        # ip
        fd("ip", [_global("string_to_ip", IP, [STRING], k.ip), _member("cidr_ip", IP, [CIDR], k.cidr_ip)]),
        fd("isIP", [_global("is_ip", BOOL, [STRING], k.is_ip)]),
        fd("ip.isCanonical", [_global("ip_is_canonical", BOOL, [STRING], k.ip_is_canonical)]),
        fd("family", [_member("ip_family", INT, [IP], k.ip_family)]),
        fd("isUnspecified", [_member("ip_is_unspecified", BOOL, [IP], k.ip_is_unspecified)]),
        fd("isLoopback", [_member("ip_is_loopback", BOOL, [IP], k.ip_is_loopback)]),
        fd("isLinkLocalMulticast", [_member("ip_is_link_local_multicast", BOOL, [IP], k.ip_is_link_local_multicast)]),
        fd("isLinkLocalUnicast", [_member("ip_is_link_local_unicast", BOOL, [IP], k.ip_is_link_local_unicast)]),
        fd("isGlobalUnicast", [_member("ip_is_global_unicast", BOOL, [IP], k.ip_is_global_unicast)]),
        # string(cidr) is missing: the runtime dispatches on the value's kind, and IP and CIDR share one.
        fd("string", [_global("ip_to_string", STRING, [IP], k.ip_string)]),
        # cidr
        fd("cidr", [_global("string_to_cidr", CIDR, [STRING], k.cidr)]),
        fd("isCIDR", [_global("is_cidr", BOOL, [STRING], k.is_cidr)]),
        fd(
            "containsIP",
            [
                _member("cidr_contains_ip_string", BOOL, [CIDR, STRING], k.cidr_contains_ip),
                _member("cidr_contains_ip_ip", BOOL, [CIDR, IP], k.cidr_contains_ip),
            ],
        ),
        fd(
            "containsCIDR",
            [
                _member("cidr_contains_cidr_string", BOOL, [CIDR, STRING], k.cidr_contains_cidr),
                _member("cidr_contains_cidr", BOOL, [CIDR, CIDR], k.cidr_contains_cidr),
            ],
        ),
        fd("prefixLength", [_member("cidr_prefix_length", INT, [CIDR], k.cidr_prefix_length)]),
        fd("masked", [_member("cidr_masked", CIDR, [CIDR], k.cidr_masked)]),
    ]


@functools.cache
def kubernetes_extension() -> Any:
    """The runtime extension carrying every Kubernetes function above (built once, shared by all environments)."""
    return cel.CelExtension("kubernetes", _declarations())
