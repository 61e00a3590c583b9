"""Answers that need the network, asked inside the synchronous authentication and authorization chains.

Authenticators and authorizers are synchronous: the built-in ones answer from memory in microseconds, and the
handler chain calls them without a coroutine per request. A webhook (the Webhook authorization mode, the token
authentication webhook) has to ask over HTTPS. It does so without making every caller asynchronous:

- with no answer at hand (cached, or fetched for this request), it raises `Pending`, naming the answer it
  needs and the coroutine that fetches it;
- `call(fn, *args)` asks the whole synchronous question; on `Pending` it hands back a `Deferred`, which, once
  awaited, fetches the answer, keeps it for this request only, and asks the whole question again. The chain
  then runs in order once more (its in-memory members cost microseconds) and the webhook answers from what
  was fetched; a second webhook in the same chain would raise its own `Pending`, and so on.

A caller that cannot wait (one that never went through `call`: `deferrable()` is false) gets whatever the
webhook answers when it cannot ask, which is a refusal to decide.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Hashable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# A question is asked again after each fetched answer; more rounds than this is a webhook that never settles.
MAX_ROUNDS = 8

_NO_ANSWERS: Mapping[Hashable, Any] = MappingProxyType({})
# The answers fetched for the question being asked, keyed by what asked for them; None: the caller cannot wait.
_answers: ContextVar[Mapping[Hashable, Any] | None] = ContextVar("pyk8s_deferred_answers", default=None)


class Pending(Exception):
    """An answer is needed first: `fetch()` gets it (and must not raise but for cancellation); `key` names it
    for this request (the asker's identity and its question)."""

    def __init__(self, key: Hashable, fetch: Callable[[], Awaitable[Any]]) -> None:
        super().__init__("an answer from the network is needed")
        self.key = key
        self.fetch = fetch


def deferrable() -> bool:
    """Whether the caller is prepared to wait for a `Pending` answer."""
    return _answers.get() is not None


def answer(key: Hashable) -> tuple[bool, Any]:
    """(True, the answer) when it was fetched for this request, else (False, None)."""
    answers = _answers.get()
    if answers and key in answers:
        return True, answers[key]
    return False, None


class Deferred(Generic[T]):
    """The rest of a question that needs the network: await it for the answer."""

    def __init__(self, fn: Callable[..., T], args: tuple[Any, ...], pending: Pending) -> None:
        self._fn = fn
        self._args = args
        self._pending = pending

    def __await__(self) -> Generator[Any, None, T]:
        return self._finish().__await__()

    async def _finish(self) -> T:
        answers: dict[Hashable, Any] = {}
        pending = self._pending
        for _ in range(MAX_ROUNDS):
            answers[pending.key] = await pending.fetch()
            token = _answers.set(answers)
            try:
                return self._fn(*self._args)
            except Pending as again:
                pending = again
            finally:
                _answers.reset(token)
        raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds of webhook calls")


def call(fn: Callable[..., T], *args: Any) -> T | Deferred[T]:
    """`fn(*args)`, asked so that it may wait: its result, or a `Deferred` to await for it."""
    token = _answers.set(_NO_ANSWERS)
    try:
        return fn(*args)
    except Pending as pending:
        return Deferred(fn, args, pending)
    finally:
        _answers.reset(token)


async def resolve(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, waiting for whatever it needs from the network."""
    result = call(fn, *args)
    if isinstance(result, Deferred):
        return await result
    return result
