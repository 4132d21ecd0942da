"""sha256 without hashlib's import cost.

hashlib loads OpenSSL (~2 ms, a few percent of a re-ingest of 1 MiB, whose goal is 5 % of a
full ingest); CPython's own builtin sha256 module gives the same digests.
"""
from __future__ import annotations

try:
    from _sha256 import sha256  # CPython <= 3.11
except ImportError:  # pragma: no cover - depends on the Python
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]
