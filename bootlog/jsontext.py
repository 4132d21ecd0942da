"""json.dumps' text (its default settings: ASCII, ", " and ": ", no indent) without importing the
json package: the package brings its decoder and scanner along (~1.4 ms of every start), and an
ingest only writes JSON.  The same C encoder json.dumps itself uses, made with the same
arguments, so the text is json.dumps' byte for byte (tests/test_jsontext.py); json.dumps itself
where Python has no _json accelerator."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Callable

try:
    from _json import encode_basestring_ascii as ascii_text, make_encoder as _make_encoder
except ImportError:  # pragma: no cover - a Python without the accelerator
    ascii_text = _make_encoder = None


def _refuse(o: Any) -> Any:  # json.JSONEncoder.default
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def encoder(*, sort_keys: bool = False, default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """A dumps(obj) for these options: json.dumps' steps, each call with its own C encoder (its
    circular-reference marks are per call: an encoding that failed may leave some behind)."""
    if _make_encoder is None:  # pragma: no cover
        import json

        return lambda obj: json.dumps(obj, sort_keys=sort_keys, default=default)
    make, text, join = _make_encoder, ascii_text, "".join
    fallback = default or _refuse

    def dumps(obj: Any) -> str:
        if obj.__class__ is str:  # (json.JSONEncoder.encode's own shortcut)
            return text(obj)
        # a new markers dict per call, as json.dumps: check_circular is a per-call state
        return join(make({}, fallback, text, None, ": ", ", ", sort_keys, False, True)(obj, 0))
    return dumps


dumps = encoder()
dumps_sorted = encoder(sort_keys=True)
dumps_str = encoder(default=str)


def flat_encoder() -> Callable[[Any], str]:
    """json.dumps for values that hold no container (a stats sample's dict of floats), its C
    encoder made once: without json.dumps' circular-reference marks, which such values never
    need and which a made-once encoder could not keep per call."""
    if _make_encoder is None:  # pragma: no cover
        return dumps
    enc, join = _make_encoder(None, _refuse, ascii_text, None, ": ", ", ", False, False, True), "".join
    return lambda values: join(enc(values, 0))


def loads(text: str | bytes) -> Any:
    """json.loads, the json package imported on the first call: from then on this module's
    `loads` is json.loads itself (call it as jsontext.loads, not a name imported from here)."""
    global loads
    import json

    loads = json.loads
    return loads(text)
