"""Validation of names, labels, annotations and object metadata, with upstream's rules and messages
(upstream: apimachinery/pkg/util/validation and apimachinery/pkg/api/validation/objectmeta.go).

Each `is_*` function returns the list of problems with a value (empty when valid), in upstream's words,
since clients show them verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import errors as e
from .errors import FieldError

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
LABEL_VALUE_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character"
)
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character"
)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_QUALIFIED_NAME = re.compile("^" + QUALIFIED_NAME_FMT + "$")
_LABEL_VALUE = re.compile("^" + LABEL_VALUE_FMT + "$")
_DNS1123_LABEL = re.compile("^" + DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1035_LABEL = re.compile("^" + DNS1035_LABEL_FMT + "$")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{x}', " for x in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


EMPTY_ERROR = "must be non-empty"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.match(value):
        errs.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1035_LABEL.match(value):
        errs.append(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + EMPTY_ERROR)
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + EMPTY_ERROR)
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    # An empty name part fails the pattern as well, and upstream reports both.
    if not _QUALIFIED_NAME.match(name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.match(value):
        errs.append(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_valid_path_segment_name(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    errs = []
    for ch in ("/", "%"):
        if ch in name:
            errs.append(f"may not contain '{ch}'")
    return errs


NameValidator = Callable[[str, bool], list[str]]


def _mask_prefix(name: str, prefix: bool) -> str:
    # A generateName prefix may end in '-': validate it as if a suffix followed.
    return name + "a" if prefix else name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_prefix(name, prefix))


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_prefix(name, prefix))


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_prefix(name, prefix))


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    if prefix:
        return [m for m in is_valid_path_segment_name(name) if "may not be" not in m]
    return is_valid_path_segment_name(name)


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [e.type_invalid(path, labels, "must be an object of string values")]
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs.extend(e.invalid(path, k, m) for m in is_qualified_name(k))
        if not isinstance(v, str):
            errs.append(e.type_invalid(f"{path}[{k}]", v, "must be a string"))
            continue
        errs.extend(e.invalid(f"{path}[{k}]", v, m) for m in is_label_value(v))
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [e.type_invalid(path, annotations, "must be an object of string values")]
    errs: list[FieldError] = []
    total = 0
    for k, v in annotations.items():
        errs.extend(e.invalid(path, k, m) for m in is_qualified_name(k.lower()))
        if not isinstance(v, str):
            errs.append(e.type_invalid(f"{path}[{k}]", v, "must be a string"))
            continue
        total += len(k.encode()) + len(v.encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(e.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs
