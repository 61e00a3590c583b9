"""Content negotiation: which body formats a request carries and which response format a client accepts
(upstream: apiserver/pkg/endpoints/handlers/negotiation).

Bodies: JSON (also when no Content-Type is sent), YAML and protobuf. Responses: JSON, YAML, protobuf for kinds that
have a protobuf message (every built-in kind; a client that also accepts JSON gets JSON for the others, one that
only takes protobuf a 406), and the `as=Table` (JSON and YAML only) / `as=PartialObjectMetadata` transformations.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..api import errors

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML)

UNKNOWN_FORMAT = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)


@dataclass(frozen=True)
class MediaType:
    type: str  # e.g. application/json
    params: dict[str, str]
    q: float = 1.0

    @property
    def as_(self) -> str:
        return self.params.get("as", "")


def parse_media_types(header: str | None) -> list[MediaType]:
    """The media ranges of an Accept header, in the client's order of preference."""
    out: list[MediaType] = []
    for part in (header or "").split(","):
        part = part.strip()
        if not part:
            continue
        bits = [b.strip() for b in part.split(";")]
        params: dict[str, str] = {}
        for b in bits[1:]:
            k, _, v = b.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        out.append(MediaType(bits[0].lower(), params, q))
    return sorted(out, key=lambda m: -m.q)


def body_format(content_type: str | None) -> str:
    """JSON or YAML for a request body; 415 for anything else."""
    mt = (content_type or "").split(";", 1)[0].strip().lower()
    if mt in ("", JSON, "*/*", "text/plain"):
        return JSON
    if mt in (YAML, "application/x-yaml", "text/yaml"):
        return YAML
    if mt == PROTOBUF:
        return PROTOBUF
    raise errors.unsupported_media_type(UNKNOWN_FORMAT)


@dataclass(frozen=True)
class Output:
    """The chosen response format: `media` is JSON, YAML or protobuf; `transform` is "", "Table",
    "PartialObjectMetadata" or "PartialObjectMetadataList"; `version` the meta.k8s.io version asked for."""

    media: str = JSON
    transform: str = ""
    version: str = "v1"
    stream: bool = False


# Clients send the same few Accept headers over and over; an Output is immutable, so each answer is kept.
@functools.lru_cache(maxsize=512)
def choose_output(accept: str | None, *, allow_table: bool = True, protobuf: bool = False) -> Output:
    """The best response format the Accept header allows; 406 if none. `protobuf`: the kind has a protobuf
    form (Tables never do; PartialObjectMetadata does)."""
    ranges = parse_media_types(accept)
    if not ranges:
        return Output()
    for m in ranges:
        base = m.type
        if base in ("*/*", "application/*"):
            return Output()
        if base not in (JSON, YAML, PROTOBUF, "application/json;stream=watch"):
            continue
        if m.as_:
            group, version = m.params.get("g", ""), m.params.get("v", "")
            if group != "meta.k8s.io" or version not in ("v1", "v1beta1"):
                continue
            if m.as_ == "Table" and allow_table:
                return Output(JSON if base == PROTOBUF else base, "Table", version)
            if m.as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                if base == PROTOBUF and version != "v1":
                    continue  # meta.k8s.io/v1beta1's PartialObjectMetadataList is not served in protobuf here
                return Output(base, m.as_, version)
            continue
        if base == PROTOBUF and not protobuf:
            continue  # a client that lists JSON too gets JSON; one that only takes protobuf gets a 406
        return Output(base, stream=m.params.get("stream") == "watch")
    accepted = "application/json, application/yaml, " + ("application/vnd.kubernetes.protobuf, " if protobuf else "")
    raise errors.not_acceptable(
        "only the following media types are accepted: " + accepted + "application/json;as=Table;v=v1;g=meta.k8s.io"
    )
