"""One line of hostile text: what a probe, a GPU tool or a container engine said, made safe to put
in a problem message (the lead will route every output through one shared escaping module later;
this is the stand-in the probe/gpumem/deploy modules share)."""
from __future__ import annotations

import unicodedata

LIMIT = 200


def one_line(text: object, limit: int = LIMIT) -> str:
    """`text` as one printable line: whitespace runs become one space, every other control or
    format character (ESC, NUL, DEL, C1, U+2028, bidi overrides, ...) is shown escaped
    (`\\x1b`) so a terminal never acts on it, and the result is cut to `limit` characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    out = []
    for ch in str(text):
        if ch in "\t\n\r\v\f" or ch == "\u2028" or ch == "\u2029" or ch == "\x85":
            out.append(" ")
        elif unicodedata.category(ch)[0] == "C":
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    line = " ".join("".join(out).split())
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return line
