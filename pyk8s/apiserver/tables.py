"""Server-side printing: the `meta.k8s.io/v1` Table kubectl asks for with `Accept: ...;as=Table` (upstream:
pkg/printers/internalversion and apiserver's default table convertor).

Kinds register their columns (name, type, format, description, priority) and a row function; every other
kind gets upstream's default `Name` / `Created At` table. Priority-1 columns are the `-o wide` ones.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..api import errors, meta
from ..api.meta import Object, parse_time

Cells = list[Any]


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    row: Callable[[Object], Cells]


NAME = Column("Name", format="name", description="Name must be unique within a namespace.")
_DEFAULT = Printer(
    (
        NAME,
        Column(
            "Created At",
            "date",
            description="CreationTimestamp is a timestamp representing the server time when this object was created.",
        ),
    ),
    lambda o: [o["metadata"].get("name", ""), o["metadata"].get("creationTimestamp")],
)
PRINTERS: dict[tuple[str, str], Printer] = {}


def printer(
    group: str, kind: str, columns: list[Column]
) -> Callable[[Callable[[Object], Cells]], Callable[[Object], Cells]]:
    """Register `fn` as the row function of (group, kind), with `columns`."""

    def deco(fn: Callable[[Object], Cells]) -> Callable[[Object], Cells]:
        PRINTERS[(group, kind)] = Printer(tuple(columns), fn)
        return fn

    return deco


def printer_for(group: str, kind: str) -> Printer:
    return PRINTERS.get((group, kind), _DEFAULT)


def human_duration(d: dt.timedelta) -> str:
    """kubectl's age format (upstream: apimachinery duration.HumanDuration)."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d{h}h" if h else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y{dy}d" if dy else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(obj: Object) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    try:
        return human_duration(meta.now() - parse_time(ts))
    except ValueError:
        return "<unknown>"


def _row_object(obj: Object, include: str, api_version: str, kind: str) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def check_include_object(include: str) -> str:
    include = include or "Metadata"
    if include not in ("Metadata", "Object", "None"):
        raise errors.bad_request(
            f'includeObject: Unsupported value: "{include}": supported values: "Metadata", "Object", "None"'
        )
    return include


def rows(
    objs: list[Object], group: str, kind: str, include: str, api_version: str, printer: Printer | None = None
) -> list[dict[str, Any]]:
    p = printer or printer_for(group, kind)
    out = []
    for o in objs:
        row: dict[str, Any] = {"cells": p.row(o)}
        ro = _row_object(o, include, api_version, kind)
        if ro is not None:
            row["object"] = ro
        out.append(row)
    return out


def table(
    objs: list[Object],
    group: str,
    kind: str,
    *,
    include: str = "Metadata",
    version: str = "v1",
    list_meta: dict[str, Any] | None = None,
    headers: bool = True,
    api_version: str = "",
    printer: Printer | None = None,
) -> dict[str, Any]:
    """A Table of `objs` by the kind's registered printer, or by `printer` (a custom resource's columns)."""
    p = printer or printer_for(group, kind)
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": list_meta or {},
        "columnDefinitions": [c.definition() for c in p.columns] if headers else None,
        "rows": rows(objs, group, kind, include, api_version, p),
    }
    if not headers:
        out.pop("columnDefinitions")
    return out
