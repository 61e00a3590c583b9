"""Kubernetes' CEL value types and their functions: Quantity, URL, IP and CIDR (upstream: apiserver pkg/cel
quantity.go, url.go, ip.go, cidr.go and pkg/cel/library quantity.go, urls.go, ip.go, cidr.go).

The CEL runtime takes opaque values from Python only as protobuf messages, so each type is a one-field message
in a private descriptor pool. The field holds the value's canonical form, so CEL's message equality is
upstream's equality: quantities by value ("1Ki" == "1024"), addresses and prefixes by their canonical text.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory, timestamp_pb2

from ..api.errors import go_quote
from ..api.quantity import Quantity, QuantityError, parse_quantity

PACKAGE = "kubernetes"
TYPE_NAMES = ("Quantity", "URL", "IP", "CIDR")


def _pool() -> descriptor_pool.DescriptorPool:
    proto = descriptor_pb2.FileDescriptorProto(name="pyk8s/cel/kubernetes.proto", package=PACKAGE, syntax="proto3")
    for name in TYPE_NAMES:
        message = proto.message_type.add(name=name)
        message.field.add(
            name="value",
            number=1,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    for module in (timestamp_pb2, duration_pb2):  # timestamps and durations inside lists and maps travel as these
        well_known = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(well_known)
        pool.Add(well_known)
    pool.Add(proto)
    return pool


POOL = _pool()
_CLASSES = {
    name: message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{PACKAGE}.{name}")) for name in TYPE_NAMES
}
QuantityMessage, URLMessage, IPMessage, CIDRMessage = (_CLASSES[n] for n in TYPE_NAMES)
TimestampMessage = message_factory.GetMessageClass(POOL.FindMessageTypeByName("google.protobuf.Timestamp"))
DurationMessage = message_factory.GetMessageClass(POOL.FindMessageTypeByName("google.protobuf.Duration"))


def timestamp(t: Any) -> Any:
    m = TimestampMessage()
    m.FromDatetime(t)
    return m


def duration(d: Any) -> Any:
    m = DurationMessage()
    m.FromTimedelta(d)
    return m


class CELError(ValueError):
    """An evaluation error raised by a library function; its text is upstream's."""


# -- Quantity -----------------------------------------------------------------------------------------------------

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)


def _q(m: Any) -> Quantity:
    coefficient, _, exponent = m.value.partition("e")
    return Quantity(int(coefficient), int(exponent))


def _qmsg(q: Quantity) -> Any:
    return QuantityMessage(value=f"{q.coefficient}e{q.exponent}")


def quantity(s: str) -> Any:
    try:
        return _qmsg(parse_quantity(s))
    except QuantityError as err:
        raise CELError(str(err)) from None


def is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True


def _as_int64(q: Quantity) -> int | None:
    if q.exponent < 0:
        return None
    if q.exponent > 18:
        return None
    v = q.coefficient * 10**q.exponent
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def quantity_sign(m: Any) -> int:
    return _q(m).sign


def quantity_is_integer(m: Any) -> bool:
    return _as_int64(_q(m)) is not None


def quantity_as_integer(m: Any) -> int:
    v = _as_int64(_q(m))
    if v is None:
        raise CELError("cannot convert value to integer")
    return v


def quantity_as_float(m: Any) -> float:
    q = _q(m)
    try:
        return float(q.as_decimal())
    except OverflowError:
        return float("inf") if q.coefficient > 0 else float("-inf")


def quantity_compare(a: Any, b: Any) -> int:
    qa, qb = _q(a), _q(b)
    return (qa > qb) - (qa < qb)


def quantity_add(a: Any, b: Any) -> Any:
    return _qmsg(_q(a) + (_q(b) if not isinstance(b, int) else Quantity(b)))


def quantity_sub(a: Any, b: Any) -> Any:
    return _qmsg(_q(a) - (_q(b) if not isinstance(b, int) else Quantity(b)))


# -- URL ----------------------------------------------------------------------------------------------------------


def _parse_url(s: str) -> urllib.parse.SplitResult:
    """Go's url.ParseRequestURI then url.Parse: an absolute URI or an absolute path, no spaces or controls."""
    if any(ord(c) < 0x20 or c == "\x7f" for c in s):
        raise CELError(
            f"URL parse error during conversion from string: parse {go_quote(s)}: net/url: invalid control character in URL"
        )
    invalid = s == ""
    parts = urllib.parse.urlsplit(s)
    if not invalid and not parts.scheme:
        invalid = not s.startswith("/")
    if not invalid and parts.scheme and not (parts.scheme[0].isalpha()):
        invalid = True
    if not invalid and parts.netloc:
        try:
            port = parts.netloc.rpartition("@")[2]
            if port.startswith("["):
                port = port.partition("]")[2]
            if ":" in port and port.rpartition(":")[2] and not port.rpartition(":")[2].isdigit():
                raise ValueError
        except ValueError:
            raise CELError(f"URL parse error during conversion from string: parse {go_quote(s)}: invalid port "
                           f"{go_quote(':' + parts.netloc.rpartition(':')[2])} after host") from None  # fmt: skip
    if invalid:
        raise CELError(f"URL parse error during conversion from string: parse {go_quote(s)}: invalid URI for request")
    return parts


def url(s: str) -> Any:
    _parse_url(s)
    return URLMessage(value=s)


def is_url(s: str) -> bool:
    try:
        _parse_url(s)
    except CELError:
        return False
    return True


def _host(m: Any) -> str:
    return urllib.parse.urlsplit(m.value).netloc.rpartition("@")[2]


def url_scheme(m: Any) -> str:
    return urllib.parse.urlsplit(m.value).scheme


def url_host(m: Any) -> str:
    return _host(m)


def url_hostname(m: Any) -> str:
    host = _host(m)
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if ":" in host else host


def url_port(m: Any) -> str:
    host = _host(m)
    if host.startswith("["):
        host = host.partition("]")[2]
    return host.rpartition(":")[2] if ":" in host else ""


def url_escaped_path(m: Any) -> str:
    path = urllib.parse.urlsplit(m.value).path
    return urllib.parse.quote(urllib.parse.unquote(path), safe="/!$&'()*+,;=:@~")


def url_query(m: Any) -> dict[str, list[str]]:
    query = urllib.parse.urlsplit(m.value).query
    out: dict[str, list[str]] = {}
    for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


# -- IP and CIDR --------------------------------------------------------------------------------------------------

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def _parse_ip(s: str) -> Address:
    if "%" in s:
        try:
            ipaddress.ip_address(s)
        except ValueError:
            pass
        else:
            raise CELError(f"IP address {go_quote(s)} with zone value is not allowed")
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        reason = _ip_reason(s)
        raise CELError(
            f"IP Address {go_quote(s)} parse error during conversion from string: ParseAddr({go_quote(s)}): {reason}"
        ) from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CELError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return addr


def _ip_reason(s: str) -> str:
    """Go's netip.ParseAddr reason for a malformed dotted quad (other addresses get its generic reason)."""
    if ":" in s or not s or not all(c.isdigit() or c == "." for c in s):
        return "unable to parse IP"
    fields = s.split(".")
    if len(fields) > 4:
        return "IPv4 address too long"
    for f in fields:
        if not f:
            return "IPv4 field must have at least one digit"
        if int(f) > 255:
            return "IPv4 field has value >255"
        if len(f) > 1 and f[0] == "0":
            return "IPv4 field has octet with leading zero"
    return "IPv4 address too short"


def _ip(m: Any) -> Address:
    return ipaddress.ip_address(m.value)


def ip(s: str) -> Any:
    return IPMessage(value=str(_parse_ip(s)))


def is_ip(s: str) -> bool:
    try:
        _parse_ip(s)
    except CELError:
        return False
    return True


def ip_is_canonical(s: str) -> bool:
    return str(_parse_ip(s)) == s


def ip_string(m: Any) -> str:
    return m.value


def ip_family(m: Any) -> int:
    return _ip(m).version


def ip_is_unspecified(m: Any) -> bool:
    return _ip(m).is_unspecified


def ip_is_loopback(m: Any) -> bool:
    return _ip(m).is_loopback


def ip_is_link_local_multicast(m: Any) -> bool:
    a = _ip(m)
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a in ipaddress.ip_network("ff02::/16")


def ip_is_link_local_unicast(m: Any) -> bool:
    a = _ip(m)
    return a in ipaddress.ip_network("169.254.0.0/16" if a.version == 4 else "fe80::/10")


def ip_is_global_unicast(m: Any) -> bool:
    """Go's IsGlobalUnicast: private ranges count, broadcast, loopback, multicast and link-local do not."""
    a = _ip(m)
    if a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or ip_is_link_local_unicast(m))


def _parse_cidr(s: str) -> Interface:
    err = ""
    if "/" not in s:
        err = f"netip.ParsePrefix({go_quote(s)}): no '/'"
    else:
        addr, _, bits = s.rpartition("/")
        if "%" in addr:
            err = f"netip.ParsePrefix({go_quote(s)}): IPv6 zones cannot be present in a prefix"
        elif not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
            err = f"netip.ParsePrefix({go_quote(s)}): bad bits after slash: {go_quote(bits)}"
        else:
            try:
                iface = ipaddress.ip_interface(s)
            except ValueError:
                try:
                    ipaddress.ip_address(addr)
                    err = f"netip.ParsePrefix({go_quote(s)}): prefix length out of range"
                except ValueError:
                    err = f"netip.ParsePrefix({go_quote(s)}): ParseAddr({go_quote(addr)}): unable to parse IP"
            else:
                if isinstance(iface.ip, ipaddress.IPv6Address) and iface.ip.ipv4_mapped is not None:
                    raise CELError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
                return iface
    raise CELError(f"network address parse error during conversion from string: {err}")


def _cidr(m: Any) -> Interface:
    return ipaddress.ip_interface(m.value)


def cidr(s: str) -> Any:
    return CIDRMessage(value=_canonical_cidr(_parse_cidr(s)))


def _canonical_cidr(i: Interface) -> str:
    return f"{i.ip}/{i.network.prefixlen}"


def is_cidr(s: str) -> bool:
    try:
        _parse_cidr(s)
    except CELError:
        return False
    return True


def cidr_string(m: Any) -> str:
    return m.value


def cidr_contains_ip(m: Any, other: Any) -> bool:
    addr = _parse_ip(other) if isinstance(other, str) else _ip(other)
    return addr in _cidr(m).network


def cidr_contains_cidr(m: Any, other: Any) -> bool:
    inner = _parse_cidr(other) if isinstance(other, str) else _cidr(other)
    outer = _cidr(m).network
    return inner.version == outer.version and inner.network.prefixlen >= outer.prefixlen and inner.ip in outer


def cidr_ip(m: Any) -> Any:
    return IPMessage(value=str(_cidr(m).ip))


def cidr_prefix_length(m: Any) -> int:
    return _cidr(m).network.prefixlen


def cidr_masked(m: Any) -> Any:
    net = _cidr(m).network
    return CIDRMessage(value=f"{net.network_address}/{net.prefixlen}")
