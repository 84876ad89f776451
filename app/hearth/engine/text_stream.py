"""Turning a stream of token bytes into text a client may see.

Two problems: a token can end in the middle of a UTF-8 character (random-weight and
byte-fallback models do this constantly), and generated text may be the start of a stop
string that must never reach the client. Both are solved by holding text back until it
is safe, never by re-decoding everything generated so far (that is quadratic).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field


class Utf8Stream:
    """Incremental UTF-8 decoder: complete characters out, partial ones held.

    Invalid sequences become U+FFFD, exactly as ``bytes.decode(errors="replace")`` would
    treat the whole byte string, so the concatenated output is independent of how the
    bytes were split into tokens.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return str(self._decoder.decode(data, final=False))

    def flush(self) -> str:
        return str(self._decoder.decode(b"", final=True))


@dataclass
class StopScanResult:
    """What may be emitted now, and the stop string that was hit, if one was."""

    text: str
    stopped: bool
    stop: str | None = None


@dataclass
class StopMatcher:
    """Holds back any suffix that could still grow into one of the stop strings."""

    stops: tuple[str, ...]
    _pending: str = field(default="", init=False)

    def feed(self, text: str) -> StopScanResult:
        if not self.stops:
            return StopScanResult(text, False)
        buffer = self._pending + text
        first_hit, hit = -1, None
        for stop in self.stops:
            index = buffer.find(stop)
            if index != -1 and (first_hit == -1 or index < first_hit):
                first_hit, hit = index, stop
        if first_hit != -1:
            self._pending = ""
            return StopScanResult(buffer[:first_hit], True, hit)
        hold = self._longest_partial_suffix(buffer)
        self._pending = buffer[len(buffer) - hold :] if hold else ""
        return StopScanResult(buffer[: len(buffer) - hold], False)

    def flush(self) -> str:
        """At the end of generation the held-back text is no stop: release it."""
        text, self._pending = self._pending, ""
        return text

    def _longest_partial_suffix(self, buffer: str) -> int:
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(buffer)), longest, -1):
                if buffer.endswith(stop[:size]):
                    longest = size
                    break
        return longest


class TextStream:
    """Bytes of sampled tokens in, safe text deltas out."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._utf8 = Utf8Stream()
        self._stops = StopMatcher(tuple(s for s in stops if s))
        self.stopped = False
        self.stop_hit: str | None = None  # which stop string ended the text

    def feed(self, piece: bytes) -> str:
        result = self._stops.feed(self._utf8.feed(piece))
        self.stopped, self.stop_hit = result.stopped, result.stop
        return result.text

    def finish(self) -> str:
        """Release held text when generation ends without a stop string."""
        result = self._stops.feed(self._utf8.flush())
        if result.stopped:
            self.stopped, self.stop_hit = True, result.stop
            return result.text
        return result.text + self._stops.flush()
