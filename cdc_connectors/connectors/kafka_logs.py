"""librdkafka's log lines through Python logging, at most a few a minute.

Without a logger, librdkafka prints every retry to stderr itself: a broker that is not
there gives hundreds of ``%3|...|FAIL|`` lines before the one clear error. Every client
here logs to the ``cdc_connectors.kafka`` logger instead, whose filter lets
:data:`LINES_PER_MINUTE` lines through per minute and says how many it held back.
"""

from __future__ import annotations

import logging
import threading
import time

#: The logger librdkafka's lines go to (``logging.getLogger("cdc_connectors.kafka")``).
LOGGER = logging.getLogger("cdc_connectors.kafka")
LINES_PER_MINUTE = 3
_WINDOW_SECONDS = 60.0


class RateLimit(logging.Filter):
    """Passes ``lines`` records per ``window`` seconds; the first one after a quiet spell
    says how many were held back."""

    def __init__(self, lines: int = LINES_PER_MINUTE, window: float = _WINDOW_SECONDS):
        super().__init__()
        self.lines = lines
        self.window = window
        self._start = 0.0
        self._passed = 0
        self._held = 0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._start >= self.window:
                self._start, self._passed = now, 0
            if self._passed >= self.lines:
                self._held += 1
                return False
            self._passed += 1
            if self._held:
                record.msg = f"{record.msg} ({self._held} more librdkafka lines held back)"
                self._held = 0
            return True


if not any(isinstance(f, RateLimit) for f in LOGGER.filters):
    LOGGER.addFilter(RateLimit())
