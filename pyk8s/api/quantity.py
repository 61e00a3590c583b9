"""Kubernetes resource quantities ("250m", "1.5Gi", "1e3"): exact parsing, arithmetic, ordering and canonical form.

This is what `resources.requests`, `resources.limits`, node capacity and quota are written in. It follows upstream's
k8s.io/apimachinery/pkg/api/resource (quantity.go, suffix.go, amount.go, math.go) as of Kubernetes v1.32, and never
uses floating point:

- `parse_quantity` accepts upstream's grammar, including its quirks (".", "+", "1.", "1.G" and "Ki" parse; an
  exponent is read as an int64 and then truncated to int32 like upstream's `int32(parsed)`), rounds magnitudes finer
  than 1n up to 1n, caps BinarySI magnitudes at 2^63-1, and turns a BinarySI value strictly between 0 and 1 into
  DecimalSI. Errors are `QuantityError` with upstream's three messages.
- `canonical` is upstream's canonical form (CanonicalizeBytes); `str(q)` is what upstream's String()/MarshalJSON
  emit, which for some inputs is the original text (see `Quantity.cached_text`).
- `value` and `milli_value` are upstream's Value() and MilliValue(): the value in units or thousandths, rounded away
  from zero.

Deliberate differences from upstream v1.32, all in cases where upstream loses or corrupts the value:

- A DecimalSI canonical exponent above 18 (no suffix past "E") is written in exponent form ("1000E" -> "1e21") and a
  BinarySI value needing more than "Ei" falls back to the decimal forms; v1.32 dropped the magnitude ("1000E" -> "1"),
  which later upstream fixed the same way.
- `value`/`milli_value` saturate at the int64 bounds, where v1.32 returned 0 or a wrapped number, and negative
  values always round away from zero (v1.32's inf.Dec path rounded some of them towards zero).
- Only the exponent digits are truncated to int32; upstream's further int32 wrap-around of the scale (an exponent
  near -2^31 combined with fraction digits) is not reproduced, the value is computed exactly instead.

Worth knowing, as upstream: JSON decoding trims surrounding whitespace before ParseQuantity (this function does not);
a BinarySI value that 1024 does not divide is written as a bare number ("9.765625Ki" -> "10000") that reads back as
DecimalSI ("10k" from then on); and adding quantities whose exponents are far apart builds the exact integer.
"""

from __future__ import annotations

import decimal
import functools
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction


class Format(StrEnum):
    """How a quantity is written; upstream's Format strings."""

    DecimalExponent = "DecimalExponent"  # 12e6
    BinarySI = "BinarySI"  # 12Mi (12 * 2^20)
    DecimalSI = "DecimalSI"  # 12M (12 * 10^6)


# upstream's splitREString; it appears only in the message, the scanner below does the real work
SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = "quantities must match the regular expression '" + SPLIT_RE_STRING + "'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that is not a quantity; the message is upstream's (ErrFormatWrong, ErrNumeric or ErrSuffix)."""


_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_FOR_POWER_OF_TEN: dict[int, str] = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_SUFFIX_FOR_POWER_OF_1024: dict[int, str] = {0: "", **{exp // 10: suffix for suffix, exp in _BINARY_SUFFIXES.items()}}

_DIGITS = frozenset("0123456789")
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")

_MAX_INT64 = (1 << 63) - 1
_MIN_INT64 = -(1 << 63)
_NANO = -9  # the finest scale a parsed quantity keeps
_MAX_DECIMAL_FAST_DIGITS = 18  # upstream's maxInt64Factors: more digits than this take the inf.Dec path
_MAX_STR_DIGITS = 4000  # below CPython's default int<->str conversion limit (4300 digits)


# --- exact integer helpers -------------------------------------------------------------------------------------------


def _int_from_digits(digits: str) -> int:
    """An ASCII digit string as an int, however long (int() refuses more than 4300 digits by default)."""
    if len(digits) <= _MAX_STR_DIGITS:
        return int(digits)
    return int(decimal.Decimal(digits))  # exact: constructing a Decimal from a string never rounds


def _int_to_str(n: int) -> str:
    """An int in decimal, however long."""
    if n.bit_length() <= _MAX_STR_DIGITS * 3:  # 2^12000 < 10^4000
        return str(n)
    return ("-" if n < 0 else "") + str(decimal.Decimal(abs(n)))  # exponent 0, so plain digits


def _strip_tens(coefficient: int, exponent: int) -> tuple[int, int]:
    """coefficient * 10^exponent with the factors of ten moved into the exponent; zero is (0, 0)."""
    if coefficient == 0:
        return 0, 0
    if coefficient % 10:
        return coefficient, exponent
    twos = (coefficient & -coefficient).bit_length() - 1  # 10^k divides it only if 2^k does
    low, high = 1, twos
    while low < high:  # the largest k with 10^k dividing the coefficient, by bisection (cheap for huge values)
        mid = (low + high + 1) // 2
        if coefficient % 10**mid == 0:
            low = mid
        else:
            high = mid - 1
    return coefficient // 10**low, exponent + low


def _shift_away_from_zero(coefficient: int, places: int) -> int:
    """coefficient / 10^places (places > 0), rounded away from zero."""
    if coefficient == 0:
        return 0
    magnitude = abs(coefficient)
    if places > magnitude.bit_length():  # 10^places > 2^bits > magnitude: a non-zero fraction below one
        result = 1
    else:
        result, remainder = divmod(magnitude, 10**places)
        result += remainder != 0
    return result if coefficient > 0 else -result


def _round_to_nano(coefficient: int, exponent: int) -> tuple[int, int]:
    """Round a magnitude finer than 1n up to the next 1n, as upstream's parser does."""
    if exponent >= _NANO:
        return coefficient, exponent
    return _strip_tens(_shift_away_from_zero(coefficient, _NANO - exponent), _NANO)


def _fits_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): an optional sign, then at least one ASCII digit, within int64."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(ch in _DIGITS for ch in digits):
        return None
    if len(digits.lstrip("0")) > 19:
        return None
    number = int(digits)
    if text[:1] == "-":
        number = -number
    return number if _MIN_INT64 <= number <= _MAX_INT64 else None


def _truncate_int32(number: int) -> int:
    """Go's int32(number): keep the low 32 bits as a signed value."""
    return ((number + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


# --- the value type --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact quantity: `coefficient * 10**exponent`, plus the format it was written in.

    The pair is kept normalised (no factor of ten left in the coefficient, zero is (0, 0)), so equality and hashing
    are by value alone, like upstream's Cmp/Equal: "1Ki" == "1024". Ordering is by value; `+` and `-` are exact and,
    like upstream's Add/Sub, keep the left operand's format unless it is zero.

    `cached_text` is the text upstream's parser keeps and writes back verbatim instead of the canonical form (it does
    so only for some inputs, e.g. "1500m", but also "+1500m" and "1.500k"); it plays no part in the value.
    """

    coefficient: int
    exponent: int = 0
    format: Format = Format.DecimalSI
    cached_text: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.coefficient, int) or not isinstance(self.exponent, int):
            raise TypeError("a Quantity's coefficient and exponent must be ints")
        if not isinstance(self.format, Format):
            object.__setattr__(self, "format", Format(self.format))
        coefficient, exponent = _strip_tens(int(self.coefficient), int(self.exponent))
        object.__setattr__(self, "coefficient", coefficient)
        object.__setattr__(self, "exponent", exponent)

    @classmethod
    def from_value(cls, number: int | Fraction | decimal.Decimal, fmt: Format = Format.DecimalSI) -> Quantity:
        """A quantity for an exact number, its magnitude rounded up to a whole 1n where it is finer (like parsing)."""
        if isinstance(number, int):
            return cls(number, 0, fmt)
        if isinstance(number, decimal.Decimal):
            if not number.is_finite():
                raise QuantityError(ERR_NUMERIC)
            sign, digits, exp = number.as_tuple()
            assert isinstance(exp, int)
            coefficient = _int_from_digits("".join(map(str, digits)) or "0")
            coefficient, exponent = _round_to_nano(-coefficient if sign else coefficient, exp)
            return cls(coefficient, exponent, fmt)
        if isinstance(number, Fraction):
            scaled = abs(number.numerator) * 10**-_NANO
            nanos = -(-scaled // number.denominator)  # ceiling of the magnitude in nanos
            return cls(nanos if number >= 0 else -nanos, _NANO, fmt)
        raise TypeError(f"cannot make a Quantity from {type(number).__name__}")

    @property
    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.coefficient > 0) - (self.coefficient < 0)

    @property
    def is_zero(self) -> bool:
        return self.coefficient == 0

    def as_fraction(self) -> Fraction:
        """The exact value (beware: a huge exponent makes a huge integer)."""
        if self.exponent >= 0:
            return Fraction(self.coefficient * 10**self.exponent)
        return Fraction(self.coefficient, 10**-self.exponent)

    def as_decimal(self) -> decimal.Decimal:
        """The exact value as a Decimal (cheap whatever the exponent)."""
        _, digits, _ = decimal.Decimal(abs(self.coefficient)).as_tuple()
        return decimal.Decimal((int(self.coefficient < 0), digits, self.exponent))

    # equality, hashing and ordering are by value; the representation is normalised, so (c, e) identifies it

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.coefficient == other.coefficient and self.exponent == other.exponent

    def __hash__(self) -> int:
        return hash((self.coefficient, self.exponent))

    def _cmp(self, other: Quantity) -> int:
        mine, theirs = self.sign, other.sign
        if mine != theirs:
            return -1 if mine < theirs else 1
        if mine == 0:
            return 0
        a, b = abs(self.coefficient), abs(other.coefficient)
        gap = self.exponent - other.exponent
        # a * 10^gap against b: a power of ten at least as long as the other side decides it without building it,
        # so that 1e2000000000 against 1 stays cheap; otherwise aligning costs no more than the operands' size
        if gap >= b.bit_length():
            return mine
        if -gap >= a.bit_length():
            return -mine
        if gap > 0:
            a *= 10**gap
        elif gap < 0:
            b *= 10**-gap
        return 0 if a == b else (mine if a > b else -mine)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._cmp(other) < 0

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._cmp(other) <= 0

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._cmp(other) > 0

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._cmp(other) >= 0

    # arithmetic: exact; the result's format is the left operand's unless that is zero (upstream's Add and Sub)

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _combine(self, other.coefficient, other.exponent, other.format)

    def __sub__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return _combine(self, -other.coefficient, other.exponent, other.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.coefficient, self.exponent, self.format)

    def __str__(self) -> str:
        """What upstream's String() and MarshalJSON() write: the kept input text if any, else the canonical form."""
        return self.cached_text if self.cached_text is not None else canonical(self)

    def __repr__(self) -> str:
        return f"Quantity({canonical(self)!r}, {self.format.value})"


def _combine(left: Quantity, coefficient: int, exponent: int, other_format: Format) -> Quantity:
    fmt = left.format if left.coefficient else other_format
    if coefficient == 0:
        return Quantity(left.coefficient, left.exponent, fmt)
    if left.coefficient == 0:
        return Quantity(coefficient, exponent, fmt)
    low = min(left.exponent, exponent)
    total = left.coefficient * 10 ** (left.exponent - low) + coefficient * 10 ** (exponent - low)
    return Quantity(total, low, fmt)


# --- parsing ---------------------------------------------------------------------------------------------------------


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """Split text like upstream's parseQuantityString: (negative, numeric text, whole digits, fraction digits, suffix).

    Leading zeros are dropped from the whole digits, which become "0" when none are left. A string that is only a
    sign and zeros is zero. The suffix is letters from "eEinumkKMGTP", then an optional sign, then digits; anything
    after that is a format error. What the suffix means is decided later.
    """
    end = len(text)
    pos = 0
    negative = False
    if text[:1] in ("+", "-"):
        negative = text[0] == "-"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return negative, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos] or "0"
    if pos == end:
        return negative, text, whole, "", ""
    fraction = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
        if pos == end:
            return negative, text, whole, fraction, ""
    numeric = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in ("+", "-"):
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return negative, numeric, whole, fraction, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) for a suffix, like upstream's suffixer.interpret."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DecimalSI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BinarySI
    if len(suffix) > 1 and suffix[0] in ("e", "E"):
        exponent = _fits_int64(suffix[1:])
        if exponent is not None:
            return 10, _truncate_int32(exponent), Format.DecimalExponent
    raise QuantityError(ERR_SUFFIX)


def parse_quantity(text: str) -> Quantity:
    """Parse a quantity string exactly as upstream's ParseQuantity does, or raise QuantityError."""
    if not isinstance(text, str):
        raise TypeError(f"a quantity is parsed from a str, not {type(text).__name__}")
    # Quantities are immutable and a cluster writes the same few ("100m", "64Mi") over and over.
    return _parse_cached(text)


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> Quantity:
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, 0, Format.DecimalSI, cached_text="0")
    negative, numeric, whole, fraction, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    digits = whole + fraction

    # Upstream has an int64 fast path for short numbers; it is exact, so it only matters for which input text is
    # kept to be written back verbatim. The slow (inf.Dec) path needs at least one digit in the numeric text.
    if fmt is Format.BinarySI:
        # upstream's digit budget: 15 - len(num) - exponent*3/10 - 1, with no fraction digits
        fast = not fraction and 14 - len(whole) - exponent * 3 // 10 >= 0
    else:
        fast = len(digits) <= _MAX_DECIMAL_FAST_DIGITS and exponent - len(fraction) >= _NANO
    if fast:
        magnitude = int(digits)
        if fmt is Format.BinarySI:
            coefficient, scale = magnitude << exponent, 0
            keep = magnitude & 7 != 0
        else:
            coefficient, scale = magnitude, exponent - len(fraction)
            keep = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
        return Quantity(-coefficient if negative else coefficient, scale, fmt, cached_text=text if keep else None)

    if not any(ch in _DIGITS for ch in numeric):
        raise QuantityError(ERR_NUMERIC)
    significant = digits.rstrip("0")
    coefficient = _int_from_digits(significant) if significant else 0
    if base == 2:
        coefficient <<= exponent
        scale = len(digits) - len(significant) - len(fraction)
    else:
        scale = exponent + len(digits) - len(significant) - len(fraction)
    coefficient, scale = _round_to_nano(coefficient, scale)  # the magnitude rounds up: ask for some, get some
    if fmt is Format.BinarySI and coefficient:
        if scale >= 0:  # a whole number (trailing zeros moved into the scale)
            too_big = scale >= 19 or coefficient * 10**scale > _MAX_INT64
            below_one = False
        else:
            unit = 10**-scale
            too_big = coefficient > _MAX_INT64 * unit
            below_one = coefficient < unit
        if too_big:
            coefficient, scale = _MAX_INT64, 0  # upstream's cap for BinarySI
        elif below_one:
            fmt = Format.DecimalSI  # a fraction of one would otherwise be rounded when written
    return Quantity(-coefficient if negative else coefficient, scale, fmt)


# --- writing and reading back ----------------------------------------------------------------------------------------


def canonical(q: Quantity) -> str:
    """Upstream's canonical form: no fractional digits, the largest suffix that loses nothing, the quantity's format.

    A BinarySI value below 1024 in magnitude or with a fraction is written as DecimalSI. Magnitudes finer than 1n (only
    possible for a Quantity built directly) round up to 1n.
    """
    coefficient, exponent = _round_to_nano(q.coefficient, q.exponent)
    if coefficient == 0:
        return "0"
    fmt = q.format
    if fmt is Format.BinarySI:
        whole = coefficient * 10**exponent if exponent >= 0 else 0
        magnitude = abs(whole)
        if magnitude < 1024:  # a fraction (normalised, so a negative exponent means one) or a small number
            fmt = Format.DecimalSI
        else:
            powers = ((magnitude & -magnitude).bit_length() - 1) // 10  # times 1024 divides it
            if powers in _SUFFIX_FOR_POWER_OF_1024:
                mantissa = magnitude >> (10 * powers)
                return _int_to_str(mantissa if whole > 0 else -mantissa) + _SUFFIX_FOR_POWER_OF_1024[powers]
            fmt = Format.DecimalSI  # past "Ei": write it in decimal rather than lose the magnitude
    # the exponent goes down to a multiple of three, the coefficient takes up the difference
    thousands = exponent // 3 * 3
    mantissa = _int_to_str(coefficient * 10 ** (exponent - thousands))
    if fmt is Format.DecimalSI:
        suffix = _SUFFIX_FOR_POWER_OF_TEN.get(thousands)
        if suffix is not None:
            return mantissa + suffix
        # past "E": fall through to exponent form rather than lose the magnitude
    return mantissa if thousands == 0 else f"{mantissa}e{thousands}"


def _scaled_value(q: Quantity, scale: int) -> int:
    """The value in units of 10^scale, rounded away from zero, saturated at the int64 bounds."""
    if q.coefficient == 0:
        return 0
    shift = q.exponent - scale
    if shift >= 19:  # at least 10^19 units in magnitude
        return _MAX_INT64 if q.coefficient > 0 else _MIN_INT64
    units = q.coefficient * 10**shift if shift >= 0 else _shift_away_from_zero(q.coefficient, -shift)
    return max(_MIN_INT64, min(_MAX_INT64, units))


def value(q: Quantity) -> int:
    """Upstream's Value(): the value in whole units rounded away from zero (int64-saturated)."""
    return _scaled_value(q, 0)


def milli_value(q: Quantity) -> int:
    """Upstream's MilliValue(): the value in thousandths rounded away from zero (int64-saturated)."""
    return _scaled_value(q, -3)
