"""Regenerate `v1_32.json`, the table of upstream's protobuf messages, from the `generated.proto` files of
kubernetes/api and kubernetes/apimachinery, and of the API groups in their own repositories that
`pyk8s.api.types.generate.EXTRA_PACKAGES` names (apiextensions.k8s.io/v1, apiregistration.k8s.io/v1).

For every message: its fields as `[number, name, label, type]`, with `label` one of `optional`, `repeated` or
`map`, and `type` a scalar (`string`, `bool`, `int32`, `int64`, `double`, `bytes`, …), a message's qualified name
in the naming of the Go type table, or for a map `[key type, value type]`. A message is named after its file's Go
package (`option go_package`), as the Go type table names the Go type it is generated from: the proto package
`k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1` is Go's `k8s.io/apiextensions-apiserver/...`, so its
`JSONSchemaProps` is `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps`. These are facts
of the wire format; nothing else of the files is kept. `pyk8s.api.protobuf.schema` joins this table with the Go
type table (`pyk8s/api/types/v1_32.json`) to learn each field's JSON name.

Usage (the same options as `pyk8s.api.types.generate`: each source a checkout, or its git directory with a
tag)::

    python -m pyk8s.api.protobuf.generate --api ~/src/kubernetes-api --apimachinery ~/src/apimachinery \
        --apiextensions ~/src/apiextensions-apiserver --aggregator ~/src/kube-aggregator \
        [--ref v0.32.0] [--apiextensions-ref v0.32.4] [--aggregator-ref v0.32.4] [-o pyk8s/api/protobuf/v1_32.json]

The table in this directory was made from the git mirrors with::

    python -m pyk8s.api.protobuf.generate --ref v0.32.0 \
        --api /work/.mirror/kubernetes+api/repo --apimachinery /work/.mirror/kubernetes+apimachinery/repo \
        --apiextensions /work/.mirror/kubernetes+apiextensions-apiserver/repo --apiextensions-ref v0.32.4 \
        --aggregator /work/.mirror/kubernetes+kube-aggregator/repo --aggregator-ref v0.32.4

The files are proto2 as go-to-protobuf writes them: a package, imports, options, and flat messages of
`optional`/`repeated`/`map<,>` fields with no options. The parser reads exactly that and fails loudly on
anything else (a nested message, an enum, a oneof).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from ..types.generate import EXTRA_PACKAGES, GoSource, add_source_arguments, sources

SCALARS = {
    "string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
    "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float",
}  # fmt: skip
_GO_PACKAGE = re.compile(r'^option\s+go_package\s*=\s*"([^"]+)"\s*;', re.M)

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TOKENS = re.compile(r'"[^"]*"|[A-Za-z_.][\w.]*|\d+|[{}<>;=,()\[\]]')


def qualified(proto_name: str, go_packages: dict[str, str] | None = None) -> str:
    """`k8s.io.api.core.v1.Pod` -> `io.k8s.api.core.v1.Pod`, the Go type table's name for the same type: the
    proto package is replaced by the Go package it is generated from, when `go_packages` (proto package -> Go
    import path) knows it."""
    package, _, name = proto_name.rpartition(".")
    go = (go_packages or {}).get(package)
    if go is not None and go.startswith("k8s.io/"):
        return "io.k8s." + go[len("k8s.io/") :].replace("/", ".") + "." + name
    if proto_name.startswith("k8s.io."):
        return "io.k8s." + proto_name[len("k8s.io.") :]
    return proto_name


def proto_files(src: GoSource, dirs: tuple[str, ...] = ()) -> list[str]:
    """Every generated.proto of a repository by path, or only those of the package directories `dirs`."""
    if dirs:
        return [f"{d}/generated.proto" for d in dirs]
    if src.git:
        out = subprocess.run(
            ["git", "--git-dir", str(src.path), "ls-tree", "-r", "--name-only", src.ref or "HEAD"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        return sorted(f for f in out.split() if f.endswith("/generated.proto"))
    return sorted(str(p.relative_to(src.path)) for p in src.path.rglob("generated.proto"))


def parse_proto(text: str, where: str) -> tuple[str, dict[str, list[list[Any]]]]:
    """The package and the messages of one generated.proto, types not yet resolved."""
    tokens = _TOKENS.findall(_COMMENTS.sub(" ", text))
    package = ""
    messages: dict[str, list[list[Any]]] = {}
    i = 0

    def expect(tok: str) -> None:
        nonlocal i
        if i >= len(tokens) or tokens[i] != tok:
            got = tokens[i] if i < len(tokens) else "end of file"
            raise SystemExit(f"{where}: expected {tok!r}, found {got!r}")
        i += 1

    while i < len(tokens):
        tok = tokens[i]
        if tok in ("syntax", "option", "import"):
            while tokens[i] != ";":
                i += 1
            i += 1
        elif tok == "package":
            package = tokens[i + 1]
            i += 2
            expect(";")
        elif tok == "message":
            name = tokens[i + 1]
            i += 2
            expect("{")
            fields: list[list[Any]] = []
            while tokens[i] != "}":
                label = tokens[i]
                if label == "map":
                    i += 1
                    expect("<")
                    key = tokens[i]
                    i += 1
                    expect(",")
                    value = tokens[i]
                    i += 1
                    expect(">")
                    typ: Any = [key, value]
                elif label in ("optional", "repeated"):
                    typ = tokens[i + 1]
                    i += 2
                else:
                    raise SystemExit(f"{where}: message {name}: cannot read a field starting {label!r}")
                fname = tokens[i]
                i += 1
                expect("=")
                number = tokens[i]
                i += 1
                expect(";")
                fields.append([int(number), fname, label, typ])
            i += 1
            if name in messages:
                raise SystemExit(f"{where}: message {name} declared twice")
            messages[name] = fields
        else:
            raise SystemExit(f"{where}: cannot read {tok!r} at the top level")
    if not package:
        raise SystemExit(f"{where}: no package")
    return package, messages


def _resolve(typ: str, package: str, known: set[str], go_packages: dict[str, str], where: str) -> str:
    if typ in SCALARS:
        return typ
    full = typ[1:] if typ.startswith(".") else f"{package}.{typ}"
    if full not in known:
        raise SystemExit(f"{where}: unknown message type {typ!r}")
    return qualified(full, go_packages)


def build(inputs: list[tuple[GoSource, tuple[str, ...]]]) -> dict[str, Any]:
    """The table from the generated.proto files of each source (all of them, or those of the directories named)."""
    parsed: list[tuple[str, str, dict[str, list[list[Any]]]]] = []
    go_packages: dict[str, str] = {}  # proto package -> the Go import path its files name
    for src, dirs in inputs:
        for rel in proto_files(src, dirs):
            text = src.read(rel)
            package, messages = parse_proto(text, rel)
            parsed.append((rel, package, messages))
            m = _GO_PACKAGE.search(_COMMENTS.sub(" ", text))
            if m:
                if go_packages.setdefault(package, m.group(1)) != m.group(1):
                    raise SystemExit(f"{rel}: package {package} is Go's {m.group(1)} here, elsewhere another")
    known = {f"{package}.{name}" for _, package, messages in parsed for name in messages}
    table: dict[str, list[list[Any]]] = {}
    for rel, package, messages in parsed:
        for name, fields in messages.items():
            out = []
            for number, fname, label, typ in sorted(fields):
                if label == "map":
                    key, value = typ
                    resolved: Any = [
                        _resolve(key, package, known, go_packages, rel),
                        _resolve(value, package, known, go_packages, rel),
                    ]
                else:
                    resolved = _resolve(typ, package, known, go_packages, rel)
                out.append([number, fname, label, resolved])
            if len({f[0] for f in out}) != len(out):
                raise SystemExit(f"{rel}: message {name} uses a field number twice")
            table[qualified(f"{package}.{name}", go_packages)] = out
    return {"messages": dict(sorted(table.items()))}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_source_arguments(p)
    p.add_argument("-o", "--output", type=Path, default=Path(__file__).with_name("v1_32.json"))
    args = p.parse_args(argv)
    api, machinery, extra = sources(args)
    table = build(
        [(api, ()), (machinery, ())] + [(extra[module], tuple(dirs)) for module, dirs in EXTRA_PACKAGES.items()]
    )
    source = {"k8s.io/api": api.ref or str(api.path), "k8s.io/apimachinery": machinery.ref or str(machinery.path)}
    source |= {module: src.ref or str(src.path) for module, src in extra.items()}
    table = {"source": source, **table}
    args.output.write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{args.output}: {len(table['messages'])} messages", file=sys.stderr)


if __name__ == "__main__":
    main()
