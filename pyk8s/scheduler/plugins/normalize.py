"""Score normalisation shared by Score plugins (upstream: plugins/helper/normalize_score.go).

`default_normalize_score` scales raw scores so the highest becomes `max_priority` (optionally reversed so the
lowest raw score wins), with Go's int64 arithmetic: products first, then division truncating toward zero.
"""

from __future__ import annotations

import numpy as np

from ..framework.interface import NodeScore, Status


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's `/` on int64 (Python's `//` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status | None:
    """Scale `scores` in place to [0, max_priority] by the largest score; with `reverse`, flip them.

    When every score is at most zero nothing is scaled; reversed, every node then gets `max_priority`
    (no node is worse than another).
    """
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return None
    for s in scores:
        score = go_div(max_priority * s.score, max_count)
        s.score = max_priority - score if reverse else score
    return None


def default_normalize_vector(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray:
    """`default_normalize_score` over an int64 array (returns a new array)."""
    max_count = int(scores.max()) if len(scores) else 0
    if max_count <= 0:
        return np.full(len(scores), max_priority, dtype=np.int64) if reverse else scores.astype(np.int64)
    prod = max_priority * scores.astype(np.int64)
    q = np.abs(prod) // max_count * np.sign(prod)  # truncation toward zero, as Go's int64 division
    return max_priority - q if reverse else q
