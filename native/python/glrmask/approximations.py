"""Holding back the per-conversion approximation warning, for callers that report it themselves.

``Grammar.from_json_schema(..., lenient=True)`` logs what it over-approximates at WARNING on the
``glrmask`` logger, once per conversion. A server converts the same schema for many requests and
reports each schema's approximations once, on its own logger (``glrmask_hf``, ``glrmask_vllm``):
inside :func:`core_warning_held_back` that core line is dropped, on this thread only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Iterator

__all__ = ["core_warning_held_back"]

# The start of the line the extension logs (native/python/src/lib.rs, `from_json_schema`).
_CORE_MESSAGE = "JSON Schema: not enforced exactly"
_held = threading.local()


class _HoldBackCoreWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (getattr(_held, "depth", 0) and str(record.msg).startswith(_CORE_MESSAGE))


logging.getLogger("glrmask").addFilter(_HoldBackCoreWarning())


@contextlib.contextmanager
def core_warning_held_back() -> Iterator[None]:
    """Drop the core's approximation warning for conversions made inside (this thread)."""
    _held.depth = getattr(_held, "depth", 0) + 1
    try:
        yield
    finally:
        _held.depth -= 1
