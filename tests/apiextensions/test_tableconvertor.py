"""The Table of a custom resource from its CRD's additionalPrinterColumns (apiextensions-apiserver
tableconvertor): the column definitions kubectl receives and the cells it prints."""

from __future__ import annotations

import datetime as dt

import pytest

from pyk8s.apiextensions.tableconvertor import (
    CREATION_TIMESTAMP_DESCRIPTION,
    NAME_DESCRIPTION,
    cell_for_json_value,
    default_columns,
    printer_for_columns,
    scale_columns,
    validate_column_json_path,
)

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    monkeypatch.setattr("pyk8s.api.meta.now", lambda: NOW)


def ago(**delta: float) -> str:
    return (NOW - dt.timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


NAME_DEFINITION = {"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}

CRONTAB_COLUMNS = [
    {"name": "Spec", "type": "string", "description": "The cron spec", "jsonPath": ".spec.cronSpec"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Image", "type": "string", "priority": 1, "jsonPath": ".spec.containers[0].image"},
    {"name": "Ratio", "type": "number", "format": "float", "jsonPath": ".status.ratio"},
    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
    {"name": "App", "type": "string", "jsonPath": ".metadata.labels.app"},
    {"name": "Items", "type": "string", "jsonPath": ".spec.items[*].name"},
    {"name": "Annotations", "type": "string", "priority": 1, "jsonPath": ".metadata['annotations']"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Last Run", "type": "date", "jsonPath": ".status.lastRun"},
]

FULL = {
    "apiVersion": "stable.example.com/v1",
    "kind": "CronTab",
    "metadata": {
        "name": "full",
        "namespace": "default",
        "creationTimestamp": ago(minutes=5),
        "labels": {"app": "cron"},
        "annotations": {"team": "a<b"},
    },
    "spec": {
        "cronSpec": "* * * * */5",
        "replicas": 3,
        "containers": [{"image": "busybox:1.36"}, {"image": "nginx"}],
        "paused": False,
        "items": [{"name": "first"}, {"name": "second"}],
    },
    "status": {
        "ratio": 2,
        "lastRun": ago(hours=12, minutes=30),
        "conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}],
    },
}
EMPTY = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "empty"}}


def test_column_definitions_follow_the_crd():
    printer = printer_for_columns(CRONTAB_COLUMNS)
    definitions = [c.definition() for c in printer.columns]
    assert definitions[0] == NAME_DEFINITION
    assert definitions[1] == {
        "name": "Spec",
        "type": "string",
        "format": "",
        "description": "The cron spec",
        "priority": 0,
    }
    assert definitions[2]["description"] == "Custom resource definition column (in JSONPath format): .spec.replicas"
    assert [(d["name"], d["type"], d["format"], d["priority"]) for d in definitions[3:6]] == [
        ("Ready", "string", "", 0),
        ("Image", "string", "", 1),
        ("Ratio", "number", "float", 0),
    ]
    assert len(definitions) == 1 + len(CRONTAB_COLUMNS)


def test_cells_of_a_full_object():
    assert printer_for_columns(CRONTAB_COLUMNS).row(FULL) == [
        "full",
        "* * * * */5",
        3,
        "True",
        "busybox:1.36",
        2.0,
        False,
        "cron",
        "first",  # only the first value of a multi-valued path
        '{"team":"a\\u003cb"}',  # maps print as Go's json.Marshal
        "5m",
        "12h",
    ]


def test_missing_values_are_null_cells():
    assert printer_for_columns(CRONTAB_COLUMNS).row(EMPTY) == ["empty"] + [None] * len(CRONTAB_COLUMNS)


def test_condition_filter_without_a_match():
    obj = {**FULL, "status": {"conditions": [{"type": "Synced", "status": "True"}, {"status": "Unknown"}]}}
    row = printer_for_columns(CRONTAB_COLUMNS[2:3]).row(obj)
    assert row == ["full", None]


def test_no_columns_serve_name_and_age():
    printer = printer_for_columns([])
    assert [c.definition() for c in printer.columns] == [
        NAME_DEFINITION,
        {"name": "Age", "type": "date", "format": "", "description": CREATION_TIMESTAMP_DESCRIPTION, "priority": 0},
    ]
    assert printer.row(FULL) == ["full", "5m"]
    assert printer.row(EMPTY) == ["empty", None]
    assert printer_for_columns(None).row({"metadata": {"name": "x", "creationTimestamp": ago(days=3)}}) == ["x", "3d"]
    assert default_columns([{"name": "A"}]) == [{"name": "A"}]


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (ago(minutes=5), "5m"),
        (ago(hours=12, minutes=30), "12h"),
        (ago(seconds=90), "90s"),
        ((NOW + dt.timedelta(hours=12, minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"), "<invalid>"),
        ("yesterday", "<invalid>"),
        ("2024-13-01T00:00:00Z", "<invalid>"),
        ("", "<unknown>"),
        ("null", "<unknown>"),
        ("0001-01-01T00:00:00Z", "<unknown>"),
    ],
)
def test_date_cells(value, cell):
    printer = printer_for_columns([{"name": "When", "type": "date", "jsonPath": ".status.when"}])
    assert printer.row({"metadata": {"name": "x"}, "status": {"when": value}}) == ["x", cell]


SERVERS = {
    "metadata": {"name": "blah"},
    "spec": {"servers": [{"hosts": ["foo"]}, {"hosts": ["bar", "baz"]}], "foo": [{"bar": [1]}, {"bar": [2, 3]}]},
}


@pytest.mark.parametrize(
    ("type_", "paths", "cells"),
    [
        (
            "string",
            [".spec.servers[0].hosts[0]", ".spec.servers[0].hosts", ".spec.servers[1].hosts", ".spec.servers[*].hosts"],
            ["foo", '["foo"]', '["bar","baz"]', '["foo"]'],
        ),
        (
            "string",
            [".spec.foo[0].bar[0]", ".spec.foo[0].bar", ".spec.foo[1].bar", ".spec.foo[*].bar"],
            ["1", "[1]", "[2,3]", "[1]"],
        ),
        (
            "integer",
            [".spec.foo[0].bar[0]", ".spec.foo[0].bar", ".spec.foo[1].bar", ".spec.foo[*].bar"],
            [1, None, None, None],
        ),
    ],
)
def test_multiple_values(type_, paths, cells):
    printer = printer_for_columns([{"name": f"c{i}", "type": type_, "jsonPath": p} for i, p in enumerate(paths)])
    assert printer.row(SERVERS) == ["blah", *cells]


def test_null_in_a_string_column_prints_no_value():
    printer = printer_for_columns(
        [
            {"name": "S", "type": "string", "jsonPath": ".spec.s"},
            {"name": "I", "type": "integer", "jsonPath": ".spec.s"},
        ]
    )
    assert printer.row({"metadata": {"name": "x"}, "spec": {"s": None}}) == ["x", "<no value>", None]


def test_evaluation_error_is_a_null_cell():
    printer = printer_for_columns([{"name": "C", "type": "string", "jsonPath": ".spec.name[0]"}])
    assert printer.row({"metadata": {"name": "x"}, "spec": {"name": "abc"}}) == ["x", None]


def test_unparsable_column_ends_the_columns():
    printer = printer_for_columns(
        [
            {"name": "Good", "type": "string", "jsonPath": ".spec.a"},
            {"name": "Bad", "type": "string", "jsonPath": ".spec[a"},
            {"name": "Later", "type": "string", "jsonPath": ".spec.b"},
        ]
    )
    assert [c.name for c in printer.columns] == ["Name", "Good"]
    assert printer.row({"metadata": {"name": "x"}, "spec": {"a": "A", "b": "B"}}) == ["x", "A"]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (".spec.replicas", None),
        ('.status.conditions[?(@.type=="Ready")].status', None),
        (".metadata['annotations']", None),
        (".spec[a", 'unrecognized column definition ".spec[a"'),
        (".spec.*x*", None),
        ("*", 'unrecognized column definition "*"'),
        ('.spec["a"]', 'unrecognized column definition ".spec[\\"a\\"]"'),
        (".spec.a\tb", 'unrecognized column definition ".spec.a\\tb"'),
    ],
)
def test_validate_column_json_path(path, error):
    assert validate_column_json_path(path) == error


@pytest.mark.parametrize(
    ("type_", "value", "cell"),
    [
        ("integer", 42, 42),
        ("integer", 3.14, 3),
        ("integer", -3.9, -3),
        ("integer", True, None),
        ("integer", "foo", None),
        ("number", 42, 42.0),
        ("number", 3.14, 3.14),
        ("number", True, None),
        ("number", "foo", None),
        ("boolean", 42, None),
        ("boolean", 3.14, None),
        ("boolean", True, True),
        ("boolean", "foo", None),
        ("string", 42, None),
        ("string", True, None),
        ("string", "foo", "foo"),
        ("date", 42, None),
        ("date", True, None),
        ("date", "", "<unknown>"),
        ("unknown", "foo", None),
        ("integer", None, None),
    ],
)
def test_cell_for_json_value(type_, value, cell):
    got = cell_for_json_value(type_, value)
    assert got == cell and type(got) is type(cell)


def test_scale_columns():
    version = {
        "subresources": {"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}
    }
    assert [(c["name"], c["type"], c["jsonPath"]) for c in scale_columns(version)] == [
        ("Desired", "integer", ".spec.replicas"),
        ("Available", "integer", ".status.replicas"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    assert [c["name"] for c in scale_columns({})] == ["Age"]
    printer = printer_for_columns(scale_columns(version))
    assert printer.row({"metadata": {"name": "x"}, "spec": {"replicas": 2}, "status": {}}) == ["x", 2, None, None]
