"""kubectl's resource builder: manifests from files, directories, URLs and stdin, decoded and mapped to
resources (upstream: cli-runtime pkg/resource, `Builder` with its visitors and `Info`).

What is read (upstream: FileVisitor, URLVisitor, StreamVisitor, ExpandPathsToFileVisitors):
- a file named with `-f` whatever its extension; a directory's `.json`, `.yaml` and `.yml` files, in name
  order, descending into subdirectories only with `recursive` (symlinked directories are not followed);
  a path that does not exist but is a glob pattern is expanded; `-` is stdin (source name `STDIN`);
  `http://` and `https://` URLs are fetched (three attempts, as kubectl's URL visitor);
- a stream starting with `{` is a stream of JSON objects, anything else YAML documents split at `---` lines;
  YAML scalars resolve as kubectl's YAML library (go-yaml v2) does: `y`/`n`/`on`/`off` are booleans,
  `0x1f`/`017`/`1_000` integers, timestamps stay strings; integral numbers are integers;
- empty and null documents are skipped; `*List` objects (`v1 List` and typed lists such as `ConfigMapList`)
  are flattened into their items, nested lists too (upstream: FlattenListVisitor).

Each object becomes an `Info`: its source, its document number (1-based, counting the non-blank documents of
the source) and item number inside a list, the object, its `Resource` from the `RESTMapper` and its namespace:
the object's own, else the default namespace, which is then written into the object (as kubectl does, so the
last-applied annotation names it). With `enforce_namespace` (an explicit `-n`) an object naming another
namespace is an error worded as kubectl's.

Errors follow kubectl's ContinueOnError builder (upstream: EagerVisitorList, ContinueOnErrorVisitor): every
source is read and every document decoded before anything is applied, and one bad document does not stop
the others from being returned, with these exceptions, all kubectl's:
- a syntax error ends its source, because the stream cannot be resynchronised: the documents before it are
  returned, those after it are not;
- with `validate` (kubectl's default `--validate=strict`), a document without `kind` or `apiVersion` also ends
  its source (kubectl's schema check runs inside the stream visitor); with `validate=False` only that
  document is an error;
- a path that does not exist fails the whole build (no `Info`s at all), as kubectl fails before visiting.
A document the server has no resource for, a list item without a kind, or a namespace mismatch is an error
for that object alone. Every message names the source and the document
(`error parsing dir/app.yaml (document 2): yaml: line 11: ...`).
"""

from __future__ import annotations

import asyncio
import codecs
import glob
import json
import os
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yaml

from ..api.errors import StatusError
from ..api.goyaml import GoYAMLLoader as ManifestLoader
from ..api.goyaml import YAMLDecodeError as DecodeError
from ..api.goyaml import to_json_value as _to_json_value
from ..api.resources import Resource
from .discovery import DiscoveryError, NoKindMatchError, RESTMapper

STDIN = "-"
STDIN_SOURCE = "STDIN"
FILE_EXTENSIONS = (".json", ".yaml", ".yml")
URL_ATTEMPTS = 3
URL_RETRY_DELAY = 1.0
URL_TIMEOUT = 30.0


# -- results -----------------------------------------------------------------------------------------------


def _where(source: str, index: int, item: tuple[int, ...] = ()) -> str:
    if item:
        return f'"{source}" (document {index}, item {".".join(map(str, item))})'
    return f'"{source}" (document {index})'


@dataclass
class Info:
    """One object from a manifest, mapped to its resource (upstream: resource.Info)."""

    source: str
    index: int
    obj: dict[str, Any]
    resource: Resource
    namespace: str
    item: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")

    @property
    def where(self) -> str:
        """`"dir/app.yaml" (document 2)`: where the object was read."""
        return _where(self.source, self.index, self.item)

    @property
    def kind_name(self) -> str:
        """`deployment.apps`, `configmap`: the lowercased kind and group kubectl prints."""
        kind = self.resource.kind.lower()
        return f"{kind}.{self.resource.group}" if self.resource.group else kind

    @property
    def object_name(self) -> str:
        """`deployment.apps/web` (upstream: the `name` printer)."""
        return f"{self.kind_name}/{self.name}"


class BuildError(Exception):
    """A source or document that could not be read, decoded or mapped. The message names the source and
    the document."""

    def __init__(self, message: str, source: str = "", index: int = 0, item: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.index = index
        self.item = item


@dataclass
class Result:
    """What a build found: the objects, in source order, and the errors met on the way."""

    infos: list[Info] = field(default_factory=list)
    errors: list[BuildError] = field(default_factory=list)


def _text(data: bytes) -> str:
    """The stream as text: a UTF-16 byte-order mark is honoured and a UTF-8 one dropped, as kubectl's file
    visitor does."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


@dataclass
class Document:
    """One decoded document of a stream, before it is mapped."""

    source: str
    index: int
    obj: Any
    item: tuple[int, ...] = ()


def decode_stream(data: bytes, source: str) -> Iterator[Document | BuildError]:
    """The documents of one stream, in order (upstream: StreamVisitor over a YAMLOrJSONDecoder). A syntax
    error is yielded as a `BuildError` and ends the stream."""
    try:
        text = _text(data)
    except UnicodeDecodeError as err:
        yield BuildError(f"error parsing {source}: {err}", source, 1)
        return
    stripped = text.lstrip()
    if stripped.startswith("{"):
        yield from _json_documents(text, source)
    else:
        yield from _yaml_documents(text, source)


def _json_documents(text: str, source: str) -> Iterator[Document | BuildError]:
    decoder = json.JSONDecoder()
    pos, index = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        index += 1
        try:
            value, pos = decoder.raw_decode(text, pos)
            value = _to_json_value(value)
        except (json.JSONDecodeError, DecodeError) as err:
            yield BuildError(f"error parsing {source} (document {index}): {err}", source, index)
            return
        if value is not None:
            yield Document(source, index, value)


def _split_yaml(text: str) -> Iterator[tuple[int, str] | str]:
    """(first line number, text) of each `---`-separated chunk (upstream: YAMLReader). A separator line may
    only carry a comment after the dashes; anything else is yielded as an error message."""
    start, lines = 0, list[str]()
    for number, line in enumerate(text.splitlines(keepends=True)):
        if line.startswith("---"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                if lines:
                    yield start, "".join(lines)
                yield f"invalid Yaml document separator: {line.rstrip()}"
                return
            if lines:
                yield start, "".join(lines)
            start, lines = number + 1, []
            continue
        lines.append(line)
    if lines:
        yield start, "".join(lines)


def _yaml_problem(err: yaml.MarkedYAMLError, first_line: int, body: str) -> str:
    """`line N: problem (context at line M)` with line numbers of the whole file; a problem found at the
    end of the document is reported on its last line."""
    last = max(0, len(body.splitlines()) - 1)
    problem = err.problem or err.context or str(err)
    out = problem
    if err.problem_mark is not None:
        out = f"line {first_line + min(err.problem_mark.line, last) + 1}: {problem}"
    if err.problem and err.context:
        at = f" at line {first_line + min(err.context_mark.line, last) + 1}" if err.context_mark is not None else ""
        out += f" ({err.context}{at})"
    return out


def _yaml_documents(text: str, source: str) -> Iterator[Document | BuildError]:
    index = 0
    for chunk in _split_yaml(text):
        if isinstance(chunk, str):
            yield BuildError(f"error parsing {source} (document {index + 1}): {chunk}", source, index + 1)
            return
        first_line, body = chunk
        if not body.strip():
            continue
        index += 1
        try:
            value = _to_json_value(yaml.load(body, Loader=ManifestLoader))
        except yaml.MarkedYAMLError as err:
            message = _yaml_problem(err, first_line, body)
            yield BuildError(f"error parsing {source} (document {index}): yaml: {message}", source, index)
            return
        except (yaml.YAMLError, DecodeError, RecursionError) as err:
            yield BuildError(f"error parsing {source} (document {index}): yaml: {err}", source, index)
            return
        if value is not None:
            yield Document(source, index, value)


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _describe_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _validation_problem(obj: Any) -> str:
    """What kubectl's validator finds missing before it looks any further (upstream: getObjectKind in
    kubectl's validation package)."""
    problems = []
    if not isinstance(obj, dict):
        problems.append("invalid object to validate")
        obj = {}
    if obj.get("apiVersion") is None:
        problems.append("apiVersion not set")
    elif not isinstance(obj["apiVersion"], str):
        problems.append("apiVersion isn't string type")
    if obj.get("kind") is None:
        problems.append("kind not set")
    elif not isinstance(obj["kind"], str):
        problems.append("kind isn't string type")
    if len(problems) == 1:
        return problems[0]
    return f"[{', '.join(problems)}]" if problems else ""


def is_list(obj: dict[str, Any]) -> bool:
    """A `List` or typed `*List` object whose items are to be flattened (a `v1 List` may have none)."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind.endswith("List"):
        return False
    items = obj.get("items")
    return isinstance(items, list) or (kind == "List" and items is None)


def flatten(doc: Document) -> Iterator[Document | BuildError]:
    """A document, or the items of a list document (recursively), each checked to be an object with a kind
    and an apiVersion (upstream: FlattenListVisitor and the unstructured decoder's checks)."""
    obj, where = doc.obj, _where(doc.source, doc.index, doc.item)
    if not isinstance(obj, dict):
        yield BuildError(
            f"unable to decode {where}: expected an object, got {_describe_type(obj)}", doc.source, doc.index, doc.item
        )
        return
    if is_list(obj):
        for n, item in enumerate(obj.get("items") or [], start=1):
            yield from flatten(Document(doc.source, doc.index, item, (*doc.item, n)))
        return
    if not isinstance(obj.get("kind"), str) or not obj["kind"]:
        yield BuildError(
            f"unable to decode {where}: Object 'Kind' is missing in '{_go_json(obj)}'", doc.source, doc.index, doc.item
        )
        return
    if not isinstance(obj.get("apiVersion"), str) or not obj["apiVersion"]:
        yield BuildError(
            f"unable to decode {where}: Object 'apiVersion' is missing in '{_go_json(obj)}'",
            doc.source, doc.index, doc.item,
        )  # fmt: skip
        return
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        yield BuildError(
            f"unable to decode {where}: metadata must be an object, got {_describe_type(meta)}",
            doc.source, doc.index, doc.item,
        )  # fmt: skip
        return
    yield doc


# -- sources -----------------------------------------------------------------------------------------------


@dataclass
class _Source:
    name: str
    kind: str  # "file", "url", "stdin"


def _has_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _walk(root: str, recursive: bool) -> Iterator[str]:
    """A directory's manifest files in the order Go's filepath.Walk visits them (lexical, depth first)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(root, entry.name)
        if entry.is_dir(follow_symlinks=False):
            if recursive:
                yield from _walk(path, recursive)
        elif os.path.splitext(entry.name)[1] in FILE_EXTENSIONS:
            yield path


def expand_paths(paths: Iterable[str], recursive: bool = False) -> tuple[list[_Source], list[BuildError]]:
    """The sources the `-f` arguments name, and an error for each that names nothing."""
    sources: list[_Source] = []
    errors: list[BuildError] = []
    for path in paths:
        if path == STDIN:
            sources.append(_Source(STDIN_SOURCE, "stdin"))
        elif path.startswith(("http://", "https://")):
            sources.append(_Source(path, "url"))
        elif os.path.isdir(path):
            sources.extend(_Source(p, "file") for p in _walk(path, recursive))
        elif os.path.exists(path):
            sources.append(_Source(path, "file"))
        elif _has_glob(path) and (matches := sorted(glob.glob(path))):
            for match in matches:
                if os.path.isdir(match):
                    sources.extend(_Source(p, "file") for p in _walk(match, recursive))
                else:
                    sources.append(_Source(match, "file"))
        else:
            errors.append(BuildError(f'the path "{path}" does not exist', path))
    return sources, errors


async def fetch_url(url: str, *, attempts: int = URL_ATTEMPTS, retry_delay: float = URL_RETRY_DELAY) -> bytes:
    """GET a manifest over HTTP(S), retrying server errors and failed connections (upstream: URLVisitor's
    readHttpWithRetries)."""
    timeout = aiohttp.ClientTimeout(total=URL_TIMEOUT)
    last = ""
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for attempt in range(1, attempts + 1):
            try:
                async with session.get(url) as resp:
                    body = await resp.read()
                    if resp.status == 200:
                        return body
                    last = f'unable to read URL "{url}", server reported {resp.status} {resp.reason or ""}'.rstrip()
                    last += f", status code={resp.status}"
                    if resp.status < 500:
                        break
            except (TimeoutError, aiohttp.ClientError, OSError) as err:
                last = f'unable to read URL "{url}": {err}'
            if attempt < attempts:
                await asyncio.sleep(retry_delay)
    raise BuildError(last, url)


def _read_file(path: str) -> bytes:
    # A plain blocking read: manifests are small local files, and nothing else runs on the loop meanwhile.
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise BuildError(f"open {path}: {err.strerror or err}", path) from err


class ResourceBuilder:
    """Builds `Info`s from `-f` arguments (upstream: resource.Builder configured as kubectl apply configures
    it: Unstructured, ContinueOnError, NamespaceParam, DefaultNamespace, FilenameParam, Flatten)."""

    def __init__(
        self,
        mapper: RESTMapper,
        *,
        namespace: str = "default",
        enforce_namespace: bool = False,
        stdin: bytes | None = None,
        validate: bool = True,
        url_attempts: int = URL_ATTEMPTS,
        url_retry_delay: float = URL_RETRY_DELAY,
    ) -> None:
        self.mapper = mapper
        self.namespace = namespace or "default"
        self.enforce_namespace = enforce_namespace
        self.validate = validate
        self._stdin = stdin
        self._paths: list[str] = []
        self._recursive = False
        self._url_attempts = url_attempts
        self._url_retry_delay = url_retry_delay

    def filename_param(self, paths: Iterable[str], recursive: bool = False) -> ResourceBuilder:
        """Add `-f` arguments: files, directories, URLs or `-` (upstream: FilenameParam)."""
        self._paths.extend(paths)
        self._recursive = self._recursive or recursive
        return self

    async def _read(self, source: _Source) -> bytes:
        if source.kind == "stdin":
            if self._stdin is None:
                self._stdin = sys.stdin.buffer.read()
            return self._stdin
        if source.kind == "url":
            return await fetch_url(source.name, attempts=self._url_attempts, retry_delay=self._url_retry_delay)
        return _read_file(source.name)

    async def documents(self) -> AsyncIterator[Document | BuildError]:
        """Every object document of every source, lists flattened, with the errors met, in order."""
        sources, errors = expand_paths(self._paths, self._recursive)
        if errors:
            for e in errors:
                yield e
            return
        if not sources and not self._paths:
            yield BuildError("must specify one of -f and -k")
            return
        if sum(1 for s in sources if s.kind == "stdin") > 1:
            yield BuildError("the stdin (-) can be given only once")
            return
        for source in sources:
            try:
                data = await self._read(source)
            except BuildError as err:
                yield err
                continue
            for doc in decode_stream(data, source.name):
                if isinstance(doc, BuildError):
                    yield doc
                    continue
                problem = _validation_problem(doc.obj) if self.validate else ""
                if problem:
                    # kubectl's schema check fails the stream it reads, like a syntax error.
                    yield BuildError(
                        f"error validating {_where(doc.source, doc.index)}: error validating data: {problem}; "
                        "if you choose to ignore these errors, turn validation off with --validate=false",
                        doc.source, doc.index,
                    )  # fmt: skip
                    break
                for flat in flatten(doc):
                    yield flat

    async def info_for(self, doc: Document) -> Info:
        """Map one checked document to its resource and namespace (upstream: mapper.infoForData and the
        SetNamespace / RequireNamespace decorators)."""
        obj: dict[str, Any] = doc.obj
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        where = _where(doc.source, doc.index, doc.item)
        try:
            resource = await self.mapper.rest_mapping(obj["kind"], obj["apiVersion"])
        except NoKindMatchError as err:
            ns = str(meta.get("namespace") or "")
            raise BuildError(
                f'resource mapping not found for name: "{name}" namespace: "{ns}" from {where}: {err}\n'
                "ensure CRDs are installed first",
                doc.source, doc.index, doc.item,
            ) from err  # fmt: skip
        except (DiscoveryError, StatusError, ConnectionError) as err:  # discovery failed
            raise BuildError(f"unable to recognize {where}: {err}", doc.source, doc.index, doc.item) from err
        namespace = ""
        if resource.namespaced:
            own = str(meta.get("namespace") or "")
            if self.enforce_namespace and own and own != self.namespace:
                raise BuildError(
                    f"error in {where}: the namespace from the provided object {json.dumps(own)} does not match "
                    f"the namespace {json.dumps(self.namespace)}. You must pass '--namespace={own}' to perform "
                    "this operation.",
                    doc.source, doc.index, doc.item,
                )  # fmt: skip
            namespace = own or self.namespace
            if own != namespace:
                obj = {**obj, "metadata": {**meta, "namespace": namespace}}
        return Info(doc.source, doc.index, obj, resource, namespace, doc.item)

    async def do(self) -> Result:
        """Read, decode and map everything (upstream: Do().Infos() with ContinueOnError)."""
        result = Result()
        async for doc in self.documents():
            if isinstance(doc, BuildError):
                result.errors.append(doc)
                continue
            try:
                result.infos.append(await self.info_for(doc))
            except BuildError as err:
                result.errors.append(err)
        return result
