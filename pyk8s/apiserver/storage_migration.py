"""Rewrites objects stored by an earlier pyk8s into the form upstream's Go types give them (api/types/codec), once
per store, the way upstream's storage version migration rewrites objects after an upgrade.

pyk8s before the typed round trip stored objects as clients sent them: a StatefulSet with `status: {}`, a
ConfigMap with an unknown `spec`, timestamps with offsets. At start, unless the store says it has been done, every
stored object of a kind with a Go type is decoded; one that comes out different is written back in its stored form
(a new resourceVersion, as any write). Objects that do not decode at all are left as they are, with a warning:
there is no form to give them. Then a marker key records that the store is migrated, so later starts (and other
API servers on the same etcd) skip the walk.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..api.meta import Object, json_copy
from ..api.types.codec import DecodeError
from ..storage import KeyExistsError, KeyNotFoundError, StorageError, Store

if TYPE_CHECKING:
    from .registry.rest import RESTStore

log = logging.getLogger(__name__)

# Outside every resource's prefix, so no watch cache sees it.
MARKER_KEY = "/registry/pyk8s.io/migrations/typed-form"
PAGE = 500


async def migrate_stored_form(store: Store, stores: Iterable[RESTStore]) -> int:
    """Rewrite what is not in stored form; the number of objects rewritten (0 when the store was done before)."""
    try:
        await store.get(MARKER_KEY)
        return 0
    except KeyNotFoundError:
        pass
    rewritten = 0
    for rest in stores:
        codec = rest.codec
        if codec is None:
            continue
        token: str | None = None
        while True:
            page = await store.list(rest.resource.key_prefix, limit=PAGE, continue_token=token)
            for obj in page.items:
                try:
                    typed = codec.decode(json_copy(obj))
                except DecodeError as e:
                    log.warning("%s %s cannot be read into its type and is left as stored: %s",
                                rest.resource.kind, obj.get("metadata", {}).get("name"), e)  # fmt: skip
                    continue
                if typed != obj:
                    rewritten += await _rewrite(store, rest, obj)
            token = page.continue_token
            if not token:
                break
    marker: Object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typed-form"}}
    try:
        await store.create(MARKER_KEY, marker)
    except KeyExistsError:
        pass  # another API server on the same etcd finished first
    if rewritten:
        log.info("rewrote %d stored objects into the form upstream's types give them", rewritten)
    return rewritten


async def _rewrite(store: Store, rest: RESTStore, obj: Object) -> int:
    md = obj["metadata"]
    key = rest.resource.key(md.get("namespace", ""), md.get("name", ""))
    assert rest.codec is not None
    codec = rest.codec

    def to_stored_form(current: Object | None) -> Object:
        if current is None:
            raise KeyNotFoundError(key)
        return codec.decode(json_copy(current))  # type: ignore[no-any-return]

    try:
        await store.guaranteed_update(key, to_stored_form)
    except (DecodeError, StorageError) as e:  # changed or gone meanwhile, or not storable: leave it
        log.warning("could not rewrite %s %s: %s", rest.resource.kind, md.get("name"), e)
        return 0
    return 1
