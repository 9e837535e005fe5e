"""Text from models, tools and workspace files made safe to print on a terminal: `visible(text)`.

A terminal interprets control characters: ESC starts CSI/OSC sequences (clear the screen, move the cursor, set the
window title, write the clipboard, make hyperlinks), BEL rings, backspace and a lone carriage return overwrite what
was printed (a line can show one command and run another), and C1 controls (U+0080-U+009F: U+009B is a one-byte
CSI) do what ESC does. Model output and tool output are untrusted, so every path that prints them on a terminal
(`bearagent run`, the interactive session, `inspect`, `events`, `runs list`) goes through this one function, and they
are shown, never interpreted. JSON output is not passed through it: it stays exact (JSON escapes C0 controls itself).

Newline and tab are kept; CRLF becomes a newline; the other C0 controls and DEL become their Unicode control
pictures (ESC -> `␛`, BEL -> `␇`, CR -> `␍`, BS -> `␈`, NUL -> `␀`, DEL -> `␡`); C1 controls and the bidirectional
embedding / override / isolate controls (which reorder how a line reads, "Trojan source") become their code
point, e.g. `<U+202E>`.
"""

from __future__ import annotations

import re

_CONTROL_PICTURES = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_CONTROL_PICTURES[0x7F] = "\u2421"
_TABLE: dict[int, str] = {
    **_CONTROL_PICTURES,
    **{code: f"<U+{code:04X}>" for code in range(0x80, 0xA0)},
    **{code: f"<U+{code:04X}>" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every terminal control character shown instead of interpreted (see the module docstring).
    Cheap when there is nothing to replace: one regex scan."""
    if _UNSAFE.search(text) is None:
        return text
    return text.replace("\r\n", "\n").translate(_TABLE)


class VisibleStream:
    """`visible` for text that arrives in pieces (streamed tokens): a CR that ends a piece is held back until the
    next piece shows whether it starts a CRLF (a newline) or is a lone CR (shown as `␍`)."""

    def __init__(self) -> None:
        self._held_cr = False

    def feed(self, piece: str) -> str:
        if self._held_cr:
            piece = "\r" + piece
            self._held_cr = False
        if piece.endswith("\r"):
            piece = piece[:-1]
            self._held_cr = True
        return visible(piece)

    def flush(self) -> str:
        """What is held back, at the end of the stream."""
        if not self._held_cr:
            return ""
        self._held_cr = False
        return visible("\r")
