"""The CSR cleaner (upstream: pkg/controller/certificates/cleaner/cleaner.go,
`certificatesigningrequest-cleaner-controller`, alias `csrcleaner`).

Requests made and approved automatically pile up; once an hour (and at start) it deletes those that are done:
- approved and issued, an hour after the approval's lastUpdateTime;
- denied, or failed, an hour after that condition's lastUpdateTime;
- pending (no condition at all), a day after creation;
- approved and issued with a certificate that has expired.
`clock` is injectable so that a test need not wait hours.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from cryptography import x509

from ...api import errors
from ...api.certificates import APPROVED, CSRS, DENIED, FAILED, certificate_of, conditions_of, pem_blocks
from ...api.meta import parse_time
from ...client.cache import SharedInformerFactory
from ...client.rest import RESTClient

log = logging.getLogger(__name__)

POLLING_INTERVAL = 3600.0
APPROVED_EXPIRATION = dt.timedelta(hours=1)
DENIED_EXPIRATION = dt.timedelta(hours=1)  # failed requests too
PENDING_EXPIRATION = dt.timedelta(hours=24)

Clock = Callable[[], dt.datetime]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CSRCleanerController:
    def __init__(
        self, client: RESTClient, factory: SharedInformerFactory, *, polling_interval: float = POLLING_INTERVAL,
        clock: Clock = _utc_now,
    ) -> None:  # fmt: skip
        self.client = client
        self.polling_interval = polling_interval
        self.clock = clock
        self.csrs = factory.informer_for(CSRS)

    async def run(self) -> None:
        log.info("Starting CSR cleaner controller")
        await self.csrs.wait_for_sync()
        while True:
            try:
                await self.clean()
            except Exception:
                log.exception("csr cleaner: pass failed")
            await asyncio.sleep(self.polling_interval)

    async def clean(self) -> None:
        """One pass over every request the informer holds."""
        for csr in self.csrs.indexer.list():
            name = csr["metadata"]["name"]
            if not self.should_delete(csr):
                continue
            try:
                await self.client.delete(CSRS, name)
            except errors.NotFound:
                pass
            except errors.StatusError as err:
                log.error("Error while attempting to clean CSR %s: unable to delete CSR %r: %s", name, name, err)

    def should_delete(self, csr: dict[str, Any]) -> bool:
        now = self.clock()
        name = csr["metadata"]["name"]
        conditions = conditions_of(csr)
        issued = bool((csr.get("status") or {}).get("certificate"))

        def past(ctype: str, age: dt.timedelta) -> bool:
            return any(
                c.get("type") == ctype and self._older_than(c.get("lastUpdateTime"), age, now) for c in conditions
            )

        if issued and past(APPROVED, APPROVED_EXPIRATION):
            log.info("Cleaning CSR %s as it is more than %s old and approved.", name, APPROVED_EXPIRATION)
            return True
        if past(DENIED, DENIED_EXPIRATION):
            log.info("Cleaning CSR %s as it is more than %s old and denied.", name, DENIED_EXPIRATION)
            return True
        if past(FAILED, DENIED_EXPIRATION):
            log.info("Cleaning CSR %s as it is more than %s old and failed.", name, DENIED_EXPIRATION)
            return True
        created = csr["metadata"].get("creationTimestamp")
        if not conditions and self._older_than(created, PENDING_EXPIRATION, now):
            log.info("Cleaning CSR %s as it is more than %s old and unhandled.", name, PENDING_EXPIRATION)
            return True
        if issued and any(c.get("type") == APPROVED for c in conditions) and self._expired(csr, now):
            log.info("Cleaning CSR %s as the associated certificate is expired.", name)
            return True
        return False

    @staticmethod
    def _older_than(timestamp: Any, age: dt.timedelta, now: dt.datetime) -> bool:
        """A set timestamp more than `age` before `now` (an unset one never is)."""
        if not timestamp:
            return False
        try:
            return now - parse_time(str(timestamp)) > age
        except ValueError:
            return False

    @staticmethod
    def _expired(csr: dict[str, Any], now: dt.datetime) -> bool:
        """Whether the first certificate in status.certificate has passed its NotAfter."""
        blocks = pem_blocks(certificate_of(csr))
        if not blocks:
            return False
        try:
            cert = x509.load_der_x509_certificate(blocks[0].der)
        except ValueError:
            return False
        return now > cert.not_valid_after_utc
