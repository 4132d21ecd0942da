"""Probes of a ready vLLM server, as the operator measures by hand after every deploy ("health
200 on 127.0.0.1", "decode through the published path in band", "~30 tok/s single-stream").

    probe("http://127.0.0.1:7770", served_name="frank-primary", tokens=32, timeout=30)
      -> ProbeResult(figures={"probe_health_s": 0.002, "probe_ttft_s": 1.36,
                              "probe_decode_tps": 30.4},
                     problems=[], models=["frank-primary"], model="frank-primary",
                     route="/v1/chat/completions", tokens=32)

Three requests and nothing else (the server is never changed): `GET /health` (200 expected),
`GET /v1/models` (the boot's served name must be among the ids), and ONE short streamed
completion of `tokens` tokens at temperature 0: `/v1/chat/completions`, or `/v1/completions`
when the chat route answers 404/405 or says the model has no chat template. `ignore_eos` (a vLLM
sampling parameter) makes the server generate all `tokens`, so the speed is measured over the
same count every time.

Figures (docs/figures.md): `probe_health_s` = request sent -> whole 200 answer; `probe_ttft_s` =
completion request sent -> first SSE chunk that carries a token (vLLM's first chunk carries only
the role, `"content": ""`); `probe_decode_tps` = the tokens that arrived after the first socket
arrival bringing any / (last token arrival - first token arrival), and no figure but a problem
line when they came in fewer than MIN_READS arrivals or half of them in one (a server decoding faster
than it streams sends them buffered: the engine tier's tiny model, 32 tokens in one or two reads,
read as 21,263 tok/s before). Tokens are the chunks carrying text (`delta.content`, `delta.reasoning` or
`delta.reasoning_content` when a reasoning parser splits the thinking off, `text` for
completions), or the final usage chunk's `completion_tokens` when the server sends one (asked
for with `stream_options.include_usage`; with speculative decoding one chunk carries several).

Bounded by construction: `timeout` is the budget of the WHOLE probe. Every socket operation
times out at the budget left, and a watchdog shuts the socket at the deadline, so a server that
accepts and never answers, trickles a byte at a time, or streams forever still ends the probe in
time. Every failure is one line in `problems` (server text passed through one_line), never an
exception: a failure of /health or /v1/models ends the probe there (what follows would fail
for the same reason and only repeat it).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import urlsplit

from bootlog.safe import one_line

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
_MAX_BODY = 1 << 20  # bytes: a /health or /v1/models answer is small; more is not one
_MAX_LINE = 1 << 20  # bytes of one SSE line
CHAT_MESSAGES = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]
PROMPT = "The numbers from 1 to 100, separated by commas: 1, 2, 3,"


@dataclass
class ProbeResult:
    """What the probe measured (`figures`, seconds and tok/s), what went wrong (`problems`,
    one human line each) and what it could not measure of a server that answered well (`notes`:
    tokens sent in one burst have no decode rate, and that is no fault of the server).
    `models`: the ids /v1/models listed; `model`/`route`: what the completion used; `tokens`: how
    many it counted."""

    figures: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    model: str | None = None
    route: str | None = None
    tokens: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


class _Fail(Exception):
    """One request went wrong; str() is the problem line."""


# ----------------------------------------------------------------------------------- transport


class _Call:
    """One HTTP request on a connection of its own, with a watchdog that shuts the socket at
    `deadline` (a socket timeout alone cannot stop a server that trickles bytes)."""

    def __init__(
        self,
        base: "_Base",
        method: str,
        path: str,
        deadline: float,
        body: dict | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.what = f"{method} {path}"
        self.deadline = deadline
        self.fired = False
        left = self._left()
        cls = http.client.HTTPSConnection if base.https else http.client.HTTPConnection
        kw: dict[str, Any] = {"context": ssl.create_default_context()} if base.https else {}
        self._timer: threading.Timer | None = None
        try:
            self.conn = cls(base.host, base.port, timeout=left, **kw)
        except (http.client.HTTPException, ValueError) as e:  # InvalidURL: a host with spaces
            raise _Fail(f"{self.what}: not a usable host ({one_line(e, 80)})") from None
        try:
            self.conn.connect()
        except (OSError, http.client.HTTPException, ValueError) as e:  # (ValueError: IDNA)
            self.conn.close()
            raise _Fail(self._why(e, connecting=True)) from None
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Accept": "application/json, text/event-stream", **(headers or {})}
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        try:
            self.conn.request(method, base.prefix + path, body=data, headers=hdrs)
            self.sent = time.monotonic()
            self.resp = self.conn.getresponse()
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            raise _Fail(self._why(e)) from None
        self.status = self.resp.status

    def _left(self) -> float:
        return max(0.05, self.deadline - time.monotonic())

    def _fire(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _why(self, e: BaseException, connecting: bool = False) -> str:
        if self.fired or isinstance(e, (socket.timeout, TimeoutError)) or time.monotonic() >= self.deadline:
            return f"{self.what}: no complete answer within the probe's time limit"
        if connecting:
            return f"{self.what}: cannot connect ({one_line(getattr(e, 'strerror', None) or e, 80)})"
        if isinstance(e, http.client.RemoteDisconnected):
            return f"{self.what}: the server closed the connection without an answer"
        if isinstance(e, (http.client.BadStatusLine, http.client.LineTooLong)):
            return f"{self.what}: the answer is not HTTP"
        if isinstance(e, http.client.IncompleteRead):
            return f"{self.what}: the server closed the connection mid-answer"
        return f"{self.what}: {one_line(type(e).__name__ + ': ' + str(e), 120)}"

    def pieces(self) -> Iterator[bytes]:
        """The body as it arrives (one recv at most per piece), until the end or the deadline."""
        while True:
            sock = self.conn.sock
            if sock is not None:
                try:
                    sock.settimeout(self._left())
                except OSError:
                    pass
            try:
                piece = self.resp.read1(65536)
            except (OSError, http.client.HTTPException, ValueError) as e:
                raise _Fail(self._why(e)) from None
            if self.fired:
                raise _Fail(self._why(TimeoutError()))
            if not piece:
                return
            yield piece

    def body(self) -> bytes:
        got = bytearray()
        for piece in self.pieces():
            got += piece
            if len(got) > _MAX_BODY:
                raise _Fail(f"{self.what}: answer larger than {_MAX_BODY >> 20} MiB")
        return bytes(got)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.conn.close()


@dataclass
class _Base:
    host: str
    port: int
    https: bool
    prefix: str  # a path the server is published under ("" for the root)


def _base(url: str) -> _Base:
    try:
        parts = urlsplit(str(url).strip())
    except ValueError:
        raise _Fail(f"not an http(s) URL: {one_line(url, 80)}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _Fail(f"not an http(s) URL: {one_line(url, 80)}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise _Fail(f"not a valid port in {one_line(url, 80)}") from None
    prefix = parts.path.rstrip("/")
    if prefix.endswith("/v1"):  # an OpenAI "base URL" (…/v1) names the same server
        prefix = prefix[:-3]
    return _Base(parts.hostname, port, parts.scheme == "https", prefix)


def _error_text(raw: bytes) -> str:
    """The message of an error body (vLLM: {"object": "error", "message": …} or
    {"error": {"message": …}}), else the body itself; one line."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return one_line(raw, 160)
    if isinstance(doc, dict):
        err = doc.get("error")
        msg = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
        msg = msg or doc.get("message") or doc.get("detail")
        if msg:
            return one_line(msg, 160)
    return one_line(raw, 160)


def _status_fail(call: _Call, raw: bytes) -> _Fail:
    text = _error_text(raw)
    hint = " (the server wants an API key)" if call.status == 401 else ""
    return _Fail(f"{call.what} answered {call.status}{hint}" + (f": {text}" if text else ""))


# ----------------------------------------------------------------------------------- the steps


def _get(base: _Base, path: str, deadline: float, headers: dict[str, str]) -> tuple[_Call, bytes, float]:
    call = _Call(base, "GET", path, deadline, headers=headers)
    try:
        raw = call.body()
        took = time.monotonic() - call.sent
    finally:
        call.close()
    return call, raw, took


def _model_ids(raw: bytes) -> list[str]:
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Fail(f"GET /v1/models: the answer is not JSON: {one_line(raw, 80)}") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise _Fail('GET /v1/models: no model list ("data") in the answer')
    ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if not ids:
        raise _Fail("GET /v1/models: the server lists no model")
    return ids


@dataclass
class _Stream:
    """What one streamed completion showed."""

    first: float | None = None  # monotonic time of the first chunk carrying a token
    last: float | None = None
    chunks: int = 0  # chunks carrying a token
    # token chunks per arrival (pieces read less than BURST_S apart are one arrival: http.client
    # hands a buffered burst over one HTTP chunk at a time): a server that decodes faster than it
    # sends (the engine tier's tiny model: 32 tokens in one or two bursts) cannot be timed per token
    arrivals: list[int] = field(default_factory=list)
    seen: float | None = None  # when the last piece was read
    usage_tokens: int | None = None
    done: bool = False  # `data: [DONE]` seen
    error: str | None = None  # what broke the stream, if something did


def _chunk_tokens(doc: Any) -> bool:
    """Whether an SSE chunk carries generated text (chat delta or completion text)."""
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not isinstance(choices, list):
        return False
    for ch in choices:
        if not isinstance(ch, dict):
            continue
        delta = ch.get("delta")
        if isinstance(delta, dict):
            for k in ("content", "reasoning", "reasoning_content"):
                if isinstance(delta.get(k), str) and delta[k]:
                    return True
            if delta.get("tool_calls"):
                return True
        if isinstance(ch.get("text"), str) and ch["text"]:
            return True
    return False


def _read_stream(call: _Call) -> _Stream:
    """The SSE stream of a completion; a transport failure, garbage or an error event ends it
    with `error` set, keeping what was measured before."""
    st = _Stream()
    try:
        _consume(call, st)
    except _Fail as e:
        st.error = str(e)
    return st


def _consume(call: _Call, st: _Stream) -> None:
    buf = b""
    for piece in call.pieces():
        now = time.monotonic()
        fresh = st.seen is None or now - st.seen > BURST_S
        st.seen = now
        buf += piece
        *lines, buf = buf.split(b"\n")
        if len(buf) > _MAX_LINE:
            raise _Fail(f"{call.what}: an SSE line longer than {_MAX_LINE >> 20} MiB")
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue  # blank separators, ": ping" comments, event:/id: fields
            payload = line[5:].strip()
            if payload == b"[DONE]":
                st.done = True
                return
            try:
                doc = json.loads(payload)
            except (ValueError, RecursionError):
                raise _Fail(
                    f"{call.what}: the stream holds something that is not JSON: {one_line(payload, 60)}"
                ) from None
            if isinstance(doc, dict) and ("error" in doc or doc.get("object") == "error"):
                raise _Fail(f"{call.what}: the server reported an error mid-stream: {_error_text(payload)}")
            if _chunk_tokens(doc):
                st.chunks += 1
                st.first = now if st.first is None else st.first
                st.last = now
                if fresh or not st.arrivals:
                    st.arrivals.append(0)
                    fresh = False
                st.arrivals[-1] += 1
            usage = doc.get("usage") if isinstance(doc, dict) else None
            if isinstance(usage, dict):
                n = usage.get("completion_tokens")
                if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                    st.usage_tokens = n


def _completion(
    base: _Base, route: str, model: str, tokens: int, deadline: float, headers: dict[str, str]
) -> tuple[_Call, _Stream | None, bytes]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": tokens,
        "stream": True,
        "temperature": 0,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    if route == CHAT:
        body["messages"] = CHAT_MESSAGES
    else:
        body["prompt"] = PROMPT
    call = _Call(base, "POST", route, deadline, body=body, headers=headers)
    try:
        if call.status != 200:
            return call, None, call.body()[:4096]
        return call, _read_stream(call), b""
    finally:
        call.close()


def _no_chat(call: _Call, raw: bytes) -> bool:
    """The chat route is not served here (so /v1/completions is the one to use)."""
    if call.status in (404, 405):
        return True
    return call.status == 400 and b"chat template" in raw.lower()


def probe(
    url: str, *, served_name: str | None, tokens: int = 32, timeout: float = 30.0, api_key: str | None = None
) -> ProbeResult:
    """Probe the server at `url` (module docstring); never raises for what the server does."""
    result = ProbeResult()
    deadline = time.monotonic() + max(0.1, float(timeout))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        base = _base(url)
        call, raw, took = _get(base, "/health", deadline, {})
        if call.status != 200:
            raise _status_fail(call, raw)
        result.figures["probe_health_s"] = round(took, 4)

        call, raw, _ = _get(base, "/v1/models", deadline, headers)
        if call.status != 200:
            raise _status_fail(call, raw)
        result.models = _model_ids(raw)
        if served_name is not None and served_name not in result.models:
            result.problems.append(
                f"served name {one_line(served_name, 60)!r} is not among /v1/models ids: "
                f"{one_line(', '.join(result.models), 120)}"
            )
        result.model = served_name if served_name in result.models else result.models[0]

        if tokens < 1:
            return result
        for route in (CHAT, COMPLETIONS):
            call, st, raw = _completion(base, route, result.model, tokens, deadline, headers)
            if st is None and route == CHAT and _no_chat(call, raw):
                continue
            break
        result.route = route
        if st is None:
            raise _status_fail(call, raw)
        _measure(result, st, call)
    except _Fail as e:
        result.problems.append(str(e))
    except Exception as e:  # noqa: BLE001 - the hook must outlive any server; say what happened
        result.problems.append(f"probe of {one_line(url, 80)} failed: {one_line(f'{type(e).__name__}: {e}', 160)}")
    return result


MIN_READS = 4  # a decode rate needs the tokens spread over at least this many arrivals
# pieces closer than this are one arrival: parsing a buffered burst takes microseconds a piece,
# and no server streams one request's tokens 0.25 ms apart (4,000 tok/s single-stream)
BURST_S = 0.00025


def _measure(result: ProbeResult, st: _Stream, call: _Call) -> None:
    """Figures from a stream, and at most one problem line about it."""
    if st.first is not None:
        result.figures["probe_ttft_s"] = round(st.first - call.sent, 4)
        result.tokens = st.usage_tokens if st.usage_tokens else st.chunks
    if st.error is not None:
        # the first token's time is real; a speed over part of a broken stream is not
        result.problems.append(st.error + (f" (after {st.chunks} token chunks)" if st.chunks else ""))
        return
    if st.first is None:
        result.problems.append(
            f"{call.what}: the stream ended without a single token" + ("" if st.done else " and without data: [DONE]")
        )
        return
    if not st.done:
        result.problems.append(f"{call.what}: the stream broke off after {st.chunks} token chunks (no data: [DONE])")
        return
    n, span = result.tokens or 0, (st.last or st.first) - st.first
    reads = st.arrivals
    if n < 2 or span <= 0 or len(reads) < MIN_READS or max(reads) * 2 > st.chunks:
        # timing bursts would divide by the gap between two socket reads (21,263 tok/s measured
        # after a restart): say so, never print such a rate
        result.notes.append(
            f"{call.what}: decode speed not measurable: {n} token(s) arrived in "
            f"{len(reads)} burst(s)"
            + (f", {max(reads)} of {st.chunks} chunks at once (the server sent them buffered)" if reads else "")
        )
        return
    # the tokens that arrived after the first burst, over the time they took to arrive
    after_first = (st.chunks - reads[0]) * n / st.chunks
    result.figures["probe_decode_tps"] = round(after_first / span, 2)


# ----------------------------------------------------------------------------------- /metrics


def scrape_metrics(url: str, *, timeout: float = 5.0, api_key: str | None = None) -> tuple[str | None, list[str]]:
    """GET /metrics, bounded like `probe`: (its text, or None and one line saying why)."""
    deadline = time.monotonic() + max(0.1, float(timeout))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        call, raw, _ = _get(_base(url), "/metrics", deadline, headers)
        if call.status != 200:
            raise _status_fail(call, raw)
    except _Fail as e:
        return None, [str(e)]
    except Exception as e:  # noqa: BLE001 - as probe(): the hook outlives any server
        return None, [f"GET /metrics failed: {one_line(f'{type(e).__name__}: {e}', 160)}"]
    return raw.decode("utf-8", "replace"), []
