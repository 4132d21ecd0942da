"""jsontext writes json.dumps' text byte for byte (the store's JSON columns, the fingerprints that
tell a stored boot from a new one), and fails where json.dumps fails."""
from __future__ import annotations

import datetime
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bootlog import jsontext

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_keys = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner)
                       | st.dictionaries(_keys, inner, max_size=4), max_leaves=20)


def _outcome(fn, obj):
    try:
        return fn(obj)
    except (TypeError, ValueError) as err:
        return type(err)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_text_is_json_dumps_text(obj):
    assert _outcome(jsontext.dumps, obj) == _outcome(json.dumps, obj)
    assert _outcome(jsontext.dumps_sorted, obj) == _outcome(lambda o: json.dumps(o, sort_keys=True), obj)
    assert _outcome(jsontext.dumps_str, obj) == _outcome(lambda o: json.dumps(o, default=str), obj)


def test_what_json_dumps_refuses_is_refused_alike():
    day = {"t": datetime.date(2026, 11, 30)}
    assert _outcome(jsontext.dumps, day) is TypeError is _outcome(json.dumps, day)
    assert jsontext.dumps_str(day) == json.dumps(day, default=str) == '{"t": "2026-11-30"}'
    loop: list = []
    loop.append(loop)
    assert _outcome(jsontext.dumps, loop) is ValueError is _outcome(json.dumps, loop)
    # a made encoder keeps no state between calls: the same object twice is no cycle
    shared = [1.5]
    assert jsontext.dumps([shared, shared]) == "[[1.5], [1.5]]"
    assert jsontext.dumps("é\n\"") == json.dumps("é\n\"") == '"\\u00e9\\n\\""'
    assert jsontext.dumps({"a": float("nan")}) == json.dumps({"a": float("nan")}) == '{"a": NaN}'


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), st.floats() | st.integers() | st.none(), max_size=8))
def test_the_flat_encoder_is_json_dumps_on_flat_values(values):
    flat = jsontext.flat_encoder()
    assert flat(values) == json.dumps(values)
    assert flat(values) == flat(values)  # (made once, called again: the same text)
