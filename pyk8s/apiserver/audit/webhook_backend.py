"""The audit webhook backend (`--audit-webhook-config-file` and its flags; upstream:
apiserver/plugin/pkg/audit/webhook and the buffered backend in plugin/pkg/audit/buffered): events are POSTed as
an audit.k8s.io/v1 EventList to the server a kubeconfig file names.

`batch` (upstream's default) buffers events (at most `--audit-webhook-batch-buffer-size`, later ones dropped and
logged) and sends them `--audit-webhook-batch-max-size` at a time, or whatever has gathered after
`--audit-webhook-batch-max-wait`. `blocking` and `blocking-strict` send each event as it comes; upstream makes the
request wait for that send, which the synchronous audit hook here cannot, so the send starts at once and the
request goes on (a deviation). A failed send is retried with exponential back-off from
`--audit-webhook-initial-backoff`, then the events are dropped and the error logged, as upstream does.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ..webhook import Backoff, SetupError, WebhookClient, error_answer, with_exponential_backoff

log = logging.getLogger("pyk8s.apiserver.audit")

MODES = ("batch", "blocking", "blocking-strict")
VERSIONS = ("audit.k8s.io/v1",)


@dataclass(frozen=True)
class WebhookOptions:
    config_file: str = ""  # "": no webhook backend
    mode: str = "batch"
    batch_buffer_size: int = 10000
    batch_max_size: int = 400
    batch_max_wait: float = 30.0
    initial_backoff: float = 10.0
    version: str = "audit.k8s.io/v1"

    def validate(self) -> list[str]:
        """Upstream's AuditWebhookOptions/AuditBatchOptions checks."""
        errs: list[str] = []
        if not self.config_file:
            return errs
        if self.mode not in MODES:
            errs.append(f"invalid audit webhook mode {self.mode}, allowed modes are {','.join(MODES)}")
        if self.version not in VERSIONS:
            errs.append(f"invalid audit webhook version {self.version}, allowed versions are {','.join(VERSIONS)}")
        if self.mode == "batch":
            if self.batch_buffer_size <= 0:
                errs.append(
                    f"invalid audit batch webhook buffer size {self.batch_buffer_size}, must be a positive number"
                )
            if self.batch_max_size <= 0:
                errs.append(f"invalid audit batch webhook max size {self.batch_max_size}, must be a positive number")
            if self.batch_max_size > self.batch_buffer_size:
                errs.append(
                    f"invalid audit batch webhook max size {self.batch_max_size}, must be less than or equal to "
                    f"buffer size {self.batch_buffer_size}"
                )
            if self.batch_max_wait <= 0:
                errs.append(
                    f"invalid audit batch webhook max wait {self.batch_max_wait:g}s, must be a positive duration"
                )
        if self.initial_backoff <= 0:
            errs.append(f"invalid audit webhook initial backoff {self.initial_backoff:g}s, must be a positive duration")
        try:
            WebhookClient.from_kubeconfig(self.config_file)
        except (SetupError, OSError, ValueError) as err:
            errs.append(f"initializing audit webhook: {err}")
        return errs


class WebhookBackend:
    """Sends events to the audit webhook; `process` never waits, `flush` sends what is buffered."""

    def __init__(self, opts: WebhookOptions) -> None:
        self.opts = opts
        self.client = WebhookClient.from_kubeconfig(opts.config_file)
        # Upstream's webhook backend retries with this back-off (factor 1.5, jitter 0.2, 5 steps).
        self.backoff = Backoff(duration=opts.initial_backoff)
        self._buffer: list[dict[str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sends: set[asyncio.Task[None]] = set()

    def process(self, ev: dict[str, Any]) -> None:
        if self.opts.mode != "batch":
            self._send([ev])
            return
        if len(self._buffer) >= self.opts.batch_buffer_size:
            log.error("Error in audit plugin 'webhook' affecting 1 audit events: audit buffer queue blocked")
            return
        self._buffer.append(ev)
        if len(self._buffer) >= self.opts.batch_max_size:
            self._send_batch()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.opts.batch_max_wait, self._send_batch)

    def _send_batch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._buffer:
            batch, self._buffer = self._buffer[: self.opts.batch_max_size], self._buffer[self.opts.batch_max_size :]
            self._send(batch)

    def _send(self, events: list[dict[str, Any]]) -> None:
        task = asyncio.get_running_loop().create_task(self._post(events))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _post(self, events: list[dict[str, Any]]) -> None:
        body = {"kind": "EventList", "apiVersion": self.opts.version, "metadata": {}, "items": events}

        async def call() -> None:
            answer = await self.client.post_json(body)
            if not 200 <= answer.status < 300:
                raise error_answer(answer.status, answer.content_type, answer.body, answer.retry_after)

        try:
            await with_exponential_backoff(self.backoff, call, lambda _err: True)
        except Exception as err:
            log.error("Error in audit plugin 'webhook' affecting %d audit events: %s", len(events), err)

    async def shutdown(self) -> None:
        """Send what is buffered, wait for every send under way, and close the connections."""
        self._send_batch()
        if self._sends:
            await asyncio.gather(*list(self._sends), return_exceptions=True)
        await self.client.close()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class UnionBackend:
    """Every event to each backend (upstream: audit.Union)."""

    def __init__(self, *backends: Any) -> None:
        self.backends = backends

    def process(self, ev: dict[str, Any]) -> None:
        for b in self.backends:
            b.process(ev)

    async def shutdown(self) -> None:
        for b in self.backends:
            shutdown = getattr(b, "shutdown", None)
            if shutdown is not None:
                await shutdown()

    def close(self) -> None:
        for b in self.backends:
            b.close()
