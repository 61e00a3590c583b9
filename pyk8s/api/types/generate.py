"""Regenerate `v1_32.json`, the table of upstream's Go API types, from kubernetes/api and kubernetes/apimachinery,
and the two API groups that live in their own repositories: apiextensions.k8s.io/v1 (CustomResourceDefinition,
kubernetes/apiextensions-apiserver) and apiregistration.k8s.io/v1 (APIService, kubernetes/kube-aggregator).

The table holds, for every struct and named type of the API packages, what the Go source says about each
field: its JSON name and options (`omitempty`, `inline`), whether it is a pointer, its Go type, and its
protobuf tag (wire type, field number, cast types). The typed JSON round trip (`pyk8s.api.types.codec`) reads
the JSON facts; the protobuf encoding reads the field numbers. Nothing here is copied into the table but
these facts. Types are named as upstream's OpenAPI names them (`io.k8s.api.core.v1.Pod`,
`io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps`).

Usage (each source a checkout, or its git directory with a tag; a checkout may also be a directory holding
only the files read, at their paths in the repository, e.g. `pkg/apis/apiregistration/v1/types.go`)::

    python -m pyk8s.api.types.generate --api ~/src/kubernetes-api --apimachinery ~/src/apimachinery \
        --apiextensions ~/src/apiextensions-apiserver --aggregator ~/src/kube-aggregator \
        [--ref v0.32.0] [--apiextensions-ref v0.32.4] [--aggregator-ref v0.32.4] [-o pyk8s/api/types/v1_32.json]

The table in this directory was made from the git mirrors with::

    python -m pyk8s.api.types.generate --ref v0.32.0 \
        --api /work/.mirror/kubernetes+api/repo --apimachinery /work/.mirror/kubernetes+apimachinery/repo \
        --apiextensions /work/.mirror/kubernetes+apiextensions-apiserver/repo --apiextensions-ref v0.32.4 \
        --aggregator /work/.mirror/kubernetes+kube-aggregator/repo --aggregator-ref v0.32.4

The Go declarations are read with a small parser made for these files: one field per line, struct tags in
backquotes, no anonymous struct types (the API conventions forbid them). It fails loudly on anything else.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .type_decl import split_map

# The files of kubernetes/apimachinery that declare what API objects use (the rest of those packages is code).
APIMACHINERY_FILES = {
    "pkg/apis/meta/v1": ("types.go", "time.go", "micro_time.go", "duration.go", "watch.go", "group_version.go"),
    "pkg/runtime": ("types.go",),
    "pkg/types": ("uid.go",),
    "pkg/api/resource": ("quantity.go",),
    "pkg/util/intstr": ("intstr.go",),
}
# API groups outside kubernetes/api: repository (its Go module) -> package directory -> the files that declare
# its types and its GroupName.
EXTRA_PACKAGES = {
    "k8s.io/apiextensions-apiserver": {
        "pkg/apis/apiextensions/v1": ("register.go", "types.go", "types_jsonschema.go"),
    },
    "k8s.io/kube-aggregator": {
        "pkg/apis/apiregistration/v1": ("register.go", "types.go"),
    },
}
BUILTINS = {
    "string", "bool", "byte", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "interface{}", "any",
}  # fmt: skip
# Go's `byte` and `any` under their canonical names.
BUILTIN_ALIASES = {"byte": "uint8", "any": "interface{}"}


class GoSource:
    """Files of one repository, from a checkout or from a git directory at a ref."""

    def __init__(self, path: Path, ref: str | None) -> None:
        self.path = path
        self.ref = ref
        self.git = ref is not None

    def list_dir(self, rel: str) -> list[str]:
        if self.git:
            out = subprocess.run(
                ["git", "--git-dir", str(self.path), "ls-tree", "--name-only", f"{self.ref}:{rel}"],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            return out.split()
        d = self.path / rel
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []

    def package_dirs(self) -> list[str]:
        """Every directory holding a register.go (an API group version)."""
        if self.git:
            out = subprocess.run(
                ["git", "--git-dir", str(self.path), "ls-tree", "-r", "--name-only", self.ref or "HEAD"],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            files = out.split()
        else:
            files = [str(p.relative_to(self.path)) for p in self.path.rglob("register.go")]
        return sorted({f.rsplit("/", 1)[0] for f in files if f.endswith("/register.go") and "/" in f})

    def read(self, rel: str) -> str:
        if self.git:
            return subprocess.run(
                ["git", "--git-dir", str(self.path), "show", f"{self.ref}:{rel}"],
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
        return (self.path / rel).read_text()


def qualified(import_path: str, name: str) -> str:
    """`k8s.io/api/core/v1` + `Pod` -> `io.k8s.api.core.v1.Pod` (the naming upstream's OpenAPI uses)."""
    if import_path.startswith("k8s.io/"):
        return "io.k8s." + import_path[len("k8s.io/") :].replace("/", ".") + "." + name
    return import_path + "." + name  # outside Kubernetes (time.Time): kept as Go spells it


@dataclass
class Package:
    import_path: str
    group: str | None = None
    version: str = ""
    imports: dict[str, str] = field(default_factory=dict)  # alias -> import path, per file (merged)
    types: dict[str, Any] = field(default_factory=dict)


_COMMENT_BLOCK = re.compile(r"/\*.*?\*/", re.S)
_TYPE_DECL = re.compile(r"^type\s+(\w+)\s+(=\s*)?(.+?)\s*$")
_FIELD = re.compile(r"^(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s+)?(?P<type>[^`]+?)\s*(?:`(?P<tag>[^`]*)`)?\s*$")
_TAG = re.compile(r'(\w+):"((?:[^"\\]|\\.)*)"')
_IMPORT_LINE = re.compile(r'^\s*(?:(\w+|\.)\s+)?"([^"]+)"\s*$')


def _strip_line_comment(line: str) -> str:
    # API type files have no `//` inside string literals on declaration lines except in tags (backquotes).
    out, in_tick = [], False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "`":
            in_tick = not in_tick
        elif c == "/" and not in_tick and line.startswith("//", i):
            break
        out.append(c)
        i += 1
    return "".join(out).rstrip()


def _imports(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    block = re.search(r"^import\s*\((.*?)^\)", text, re.S | re.M)
    lines = block.group(1).splitlines() if block else []
    lines += [m.group(1) for m in re.finditer(r'^import\s+((?:\w+\s+)?"[^"]+")\s*$', text, re.M)]
    for line in lines:
        m = _IMPORT_LINE.match(_strip_line_comment(line))
        if m:
            alias, path = m.group(1), m.group(2)
            out[alias or path.rsplit("/", 1)[-1]] = path
    return out


def parse_package(src: GoSource, rel: str, import_path: str, only: tuple[str, ...] = ()) -> Package:
    pkg = Package(import_path)
    for name in only or src.list_dir(rel):
        if not name.endswith(".go") or name.endswith("_test.go") or "generated" in name or name.startswith("zz_"):
            continue
        text = src.read(f"{rel}/{name}")
        imports = _imports(text)
        m = re.search(r'^const\s+GroupName\s*=\s*"([^"]*)"', text, re.M)
        if m:
            pkg.group = m.group(1)
        _parse_types(_COMMENT_BLOCK.sub("", text), imports, pkg, f"{rel}/{name}")
    pkg.version = import_path.rsplit("/", 1)[-1]
    return pkg


def _parse_types(text: str, imports: dict[str, str], pkg: Package, where: str) -> None:
    lines = [_strip_line_comment(x) for x in text.splitlines()]
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("type ("):
            raise SystemExit(f"{where}: grouped type declarations are not supported by this parser")
        m = _TYPE_DECL.match(line)
        if not m:
            i += 1
            continue
        name, alias, rest = m.group(1), bool(m.group(2)), m.group(3)
        if rest == "struct {":
            fields, i = _parse_struct(lines, i + 1, imports, pkg, f"{where}: {name}")
            pkg.types[name] = {"fields": fields}
        elif rest.startswith("struct{}") or rest == "struct {}":
            pkg.types[name] = {"fields": []}
            i += 1
        elif rest.startswith("interface"):
            # Interfaces are not data; skip to the end of the declaration.
            if rest.endswith("{"):
                while i < len(lines) and lines[i].strip() != "}":
                    i += 1
            i += 1
        elif rest.startswith("func"):
            i += 1
        else:
            pkg.types[name] = {
                "underlying": _resolve(rest, imports, pkg.import_path),
                **({"alias": True} if alias else {}),
            }
            i += 1


def _parse_struct(
    lines: list[str], i: int, imports: dict[str, str], pkg: Package, where: str
) -> tuple[list[dict[str, Any]], int]:
    fields: list[dict[str, Any]] = []
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        if line == "}":
            return fields, i
        m = _FIELD.match(line)
        if not m or "struct {" in line or "struct{" in line.replace("struct{}", ""):
            raise SystemExit(f"{where}: cannot read field line {line!r}")
        names = [n.strip() for n in (m.group("names") or "").split(",") if n.strip()]
        typ = m.group("type").strip()
        tags = dict(_TAG.findall(m.group("tag") or ""))
        embedded = not names
        if embedded:
            # An embedded field's name is its type's name (`metav1.TypeMeta` -> TypeMeta).
            names = [typ.lstrip("*").rsplit(".", 1)[-1]]
        json_tag = tags.get("json")
        for go_name in names:
            if not go_name[0].isupper():
                continue  # unexported: not part of the wire form
            entry: dict[str, Any] = {"go": go_name, "type": _resolve(typ, imports, pkg.import_path)}
            if json_tag == "-":
                continue
            if json_tag is None:
                json_name, opts = ("" if embedded else go_name), []
            else:
                json_name, *opts = json_tag.split(",")
            if embedded and not json_name:
                entry["inline"] = True  # Go promotes an untagged or unnamed embedded struct's fields
            elif "inline" in opts:
                entry["inline"] = True
            entry["json"] = json_name if not entry.get("inline") else ""
            if "omitempty" in opts:
                entry["omitempty"] = True
            if "string" in opts:
                entry["string"] = True
            if "protobuf" in tags:
                entry["protobuf"] = tags["protobuf"]
            for extra in ("patchStrategy", "patchMergeKey"):
                if extra in tags:
                    entry[extra] = tags[extra]
            fields.append(entry)
    raise SystemExit(f"{where}: struct without an end")


def _resolve(expr: str, imports: dict[str, str], here: str) -> str:
    """A Go type expression with every named type qualified (`[]Container` -> `[]io.k8s.api.core.v1.Container`)."""
    expr = expr.strip()
    if expr.startswith("*"):
        return "*" + _resolve(expr[1:], imports, here)
    if expr.startswith("[]"):
        return "[]" + _resolve(expr[2:], imports, here)
    if re.match(r"^\[\d+\]", expr):
        n, rest = expr[1:].split("]", 1)
        return f"[{n}]" + _resolve(rest, imports, here)
    if expr.startswith("map["):
        key, value = split_map(expr)
        return f"map[{_resolve(key, imports, here)}]{_resolve(value, imports, here)}"
    if expr in ("interface{}", "any"):
        return "interface{}"
    if expr in BUILTINS:
        return BUILTIN_ALIASES.get(expr, expr)
    if "." in expr:
        alias, name = expr.split(".", 1)
        if alias not in imports:
            raise SystemExit(f"unknown package {alias!r} in {expr!r} ({here})")
        return qualified(imports[alias], name)
    if not re.match(r"^[A-Za-z_]\w*$", expr):
        raise SystemExit(f"cannot read type {expr!r} ({here})")
    return qualified(here, expr)


def build(api: GoSource, machinery: GoSource, extra: dict[str, GoSource]) -> dict[str, Any]:
    """The table from kubernetes/api, kubernetes/apimachinery and the repositories of EXTRA_PACKAGES (`extra`:
    module path -> its source)."""
    packages: list[Package] = []
    served: set[str] = set()  # import paths of API group versions: their top-level types are kinds
    for rel in api.package_dirs():
        packages.append(parse_package(api, rel, f"k8s.io/api/{rel}"))
        served.add(f"k8s.io/api/{rel}")
    for rel, files in APIMACHINERY_FILES.items():
        packages.append(parse_package(machinery, rel, f"k8s.io/apimachinery/{rel}", files))
    for module, dirs in EXTRA_PACKAGES.items():
        for rel, files in dirs.items():
            packages.append(parse_package(extra[module], rel, f"{module}/{rel}", files))
            served.add(f"{module}/{rel}")
    types: dict[str, Any] = {}
    kinds: dict[str, dict[str, str]] = {}
    for pkg in packages:
        for name, decl in pkg.types.items():
            types[qualified(pkg.import_path, name)] = decl
        if pkg.group is None or pkg.import_path not in served:
            continue
        gv = f"{pkg.group}/{pkg.version}" if pkg.group else pkg.version
        for name, decl in pkg.types.items():
            fields = decl.get("fields") or []
            if fields and fields[0].get("inline") and fields[0]["type"].endswith("meta.v1.TypeMeta"):
                kinds.setdefault(gv, {})[name] = qualified(pkg.import_path, name)
    _check_references(types)
    source = {"k8s.io/api": api.ref or str(api.path), "k8s.io/apimachinery": machinery.ref or str(machinery.path)}
    source |= {module: src.ref or str(src.path) for module, src in extra.items()}
    return {
        "source": source,
        "kinds": {gv: dict(sorted(ks.items())) for gv, ks in sorted(kinds.items())},
        "types": dict(sorted(types.items())),
    }


def _names_in(expr: str) -> list[str]:
    return [t for t in re.split(r"[\[\]*]+|map", expr) if t and "." in t]


def _check_references(types: dict[str, Any]) -> None:
    missing = set()
    for decl in types.values():
        exprs = [f["type"] for f in decl.get("fields", [])] + ([decl["underlying"]] if "underlying" in decl else [])
        for expr in exprs:
            for name in _names_in(expr):
                # watch.Event is only named by meta/v1's InternalEvent, which never reaches the wire.
                if (
                    name.startswith("io.k8s.")
                    and name not in types
                    and not name.startswith("io.k8s.apimachinery.pkg.watch.")
                ):
                    missing.add(name)
    if missing:
        raise SystemExit("types referenced but not found: " + ", ".join(sorted(missing)))


def add_source_arguments(p: argparse.ArgumentParser) -> None:
    """The options naming the repositories read (shared with the protobuf generator)."""
    p.add_argument("--api", type=Path, required=True, help="kubernetes/api: a checkout, or a git dir with --ref")
    p.add_argument("--apimachinery", type=Path, required=True, help="kubernetes/apimachinery, likewise")
    p.add_argument("--ref", default=None, help="tag to read from the git directories of those two (e.g. v0.32.0)")
    p.add_argument("--apiextensions", type=Path, required=True, help="kubernetes/apiextensions-apiserver, likewise")
    p.add_argument("--apiextensions-ref", default=None, help="its tag, for a git directory (e.g. v0.32.4)")
    p.add_argument("--aggregator", type=Path, required=True, help="kubernetes/kube-aggregator, likewise")
    p.add_argument("--aggregator-ref", default=None, help="its tag, for a git directory (e.g. v0.32.4)")


def sources(args: argparse.Namespace) -> tuple[GoSource, GoSource, dict[str, GoSource]]:
    """kubernetes/api, kubernetes/apimachinery and the EXTRA_PACKAGES modules' sources, from the options."""
    extra = {
        "k8s.io/apiextensions-apiserver": GoSource(args.apiextensions, args.apiextensions_ref),
        "k8s.io/kube-aggregator": GoSource(args.aggregator, args.aggregator_ref),
    }
    assert extra.keys() == EXTRA_PACKAGES.keys()
    return GoSource(args.api, args.ref), GoSource(args.apimachinery, args.ref), extra


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_source_arguments(p)
    p.add_argument("-o", "--output", type=Path, default=Path(__file__).with_name("v1_32.json"))
    args = p.parse_args(argv)
    table = build(*sources(args))
    args.output.write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2) + b"\n")
    print(
        f"{args.output}: {len(table['types'])} types, {sum(map(len, table['kinds'].values()))} kinds", file=sys.stderr
    )


if __name__ == "__main__":
    main()
