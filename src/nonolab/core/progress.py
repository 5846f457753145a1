"""A small progress line on stderr for long command-line work.

:class:`Progress` redraws one line (``desc: done/total [bar] elapsed`` and an optional note)
on a terminal and writes nothing at all when the stream is not a terminal (a file, a pipe, a
CI log), so piped or captured output stays clean. It uses only the standard library, so the
core layer stays free of optional dependencies.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

#: characters of the bar between the brackets
BAR_WIDTH = 24


class Progress:
    """A progress line: ``with Progress(total, "solve") as bar: ... bar.update()``.

    ``total`` is the number of steps (None when unknown: a count without a bar). ``stream``
    defaults to ``sys.stderr``; ``enabled`` defaults to whether ``stream`` is a terminal.
    Redraws at most every ``min_interval_s`` seconds (and always at the last step); the line
    is cleared when the context ends, so the output that follows starts on a clean line.
    """

    def __init__(
        self,
        total: int | None,
        desc: str,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        min_interval_s: float = 0.1,
    ) -> None:
        self.total = total
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.min_interval_s = min_interval_s
        self.n = 0
        self.note = ""
        self.t0 = time.monotonic()
        self._last_draw = float("-inf")
        self._drawn = False

    def __enter__(self) -> Progress:
        self.draw()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def line(self) -> str:
        """Return the progress line as text (without carriage return)."""
        elapsed = time.monotonic() - self.t0
        if self.total:
            frac = min(self.n / self.total, 1.0)
            filled = round(frac * BAR_WIDTH)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            text = f"{self.desc}: {self.n}/{self.total} [{bar}] {elapsed:.1f} s"
        else:
            text = f"{self.desc}: {self.n} {elapsed:.1f} s"
        return f"{text}  {self.note}" if self.note else text

    def update(self, n: int = 1, note: str | None = None) -> None:
        """Advance by ``n`` steps (and set the note shown after the bar); redraw when due."""
        self.n += n
        if note is not None:
            self.note = note
        now = time.monotonic()
        if now - self._last_draw >= self.min_interval_s or self.n == self.total:
            self.draw()

    def set_note(self, note: str) -> None:
        """Set the note shown after the bar; redraw when due."""
        self.update(0, note)

    def draw(self) -> None:
        """Redraw the line now (nothing when disabled)."""
        if not self.enabled:
            return
        self._last_draw = time.monotonic()
        try:
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False
            return
        self._drawn = True

    def clear(self) -> None:
        """Erase the line (when one is shown), e.g. before printing a result; the next
        :meth:`update` draws it again."""
        if self.enabled and self._drawn:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                self.enabled = False
            self._drawn = False
            self._last_draw = float("-inf")

    def close(self) -> None:
        """Clear the line (when one was drawn) and draw no more."""
        self.clear()
        self.enabled = False


__all__ = ["BAR_WIDTH", "Progress"]
