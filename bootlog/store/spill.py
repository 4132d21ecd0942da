"""The spill file of one ingest: what a big parse would otherwise hold in memory until it is
stored (finished sample chunks past a budget, the boots a crash loop retires), in an anonymous
temporary file that the system removes when the process ends, however it ends."""

from __future__ import annotations

import pickle
import tempfile
from typing import Any

MEMORY_BUDGET = 32 << 20  # bytes of chunk text kept in memory before chunks go to the file


class Spill:
    def __init__(self, budget: int = MEMORY_BUDGET) -> None:
        self.budget, self.held = budget, 0
        self.file: Any = None
        self.broken = False  # (no room in the temp dir: everything stays in memory)

    def put(self, text: str) -> str | tuple[int, int]:
        """A chunk's JSON text, kept: the text itself while the budget lasts, else its place."""
        if self.held + len(text) <= self.budget:
            self.held += len(text)
            return text
        at = self._write(text.encode("utf-8"))
        return text if at is None else at

    def get(self, ref: str | tuple[int, int]) -> str:
        return ref if isinstance(ref, str) else self._read(ref).decode("utf-8")

    def dump(self, obj: Any) -> Any:
        """An object (a retired boot) out of memory: its place in the file, or the object itself."""
        at = self._write(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        return obj if at is None else at

    def load(self, ref: tuple[int, int]) -> Any:
        return pickle.loads(self._read(ref))

    def _write(self, data: bytes) -> tuple[int, int] | None:
        if self.broken:
            return None
        try:
            if self.file is None:
                self.file = tempfile.TemporaryFile(prefix="bootlog-spill-")
            self.file.seek(0, 2)
            at = self.file.tell()
            self.file.write(data)
            return at, len(data)
        except OSError:
            self.broken = True
            return None

    def _read(self, ref: tuple[int, int]) -> bytes:
        at, n = ref
        self.file.seek(at)
        return self.file.read(n)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
