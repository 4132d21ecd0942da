"""vline.parse_line on verbatim lines of every era (corpus fixtures, docs/log-formats.md)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bootlog.records import Record
from bootlog.parse.vline import parse_line


def pl(text: str, year: int | None = 2026, ts: datetime | None = None):
    return parse_line(Record(lineno=7, text=text, ts=ts), year)


@pytest.mark.parametrize(
    "text, level, src, msg",
    [
        # v0.3 - v0.7: no bracket before file:line (corpus 001)
        (
            "INFO 04-28 16:55:11 api_server.py:440] vLLM API server version 0.5.5",
            "INFO",
            "api_server.py:440",
            "vLLM API server version 0.5.5",
        ),
        # v0.8+: bracketed (corpus 053)
        (
            "INFO 05-28 20:40:19 [kv_cache_utils.py:643] GPU KV cache size: 349,472 tokens",
            "INFO",
            "kv_cache_utils.py:643",
            "GPU KV cache size: 349,472 tokens",
        ),
        # DEBUG path-style fileinfo (corpus 029, Gaudi)
        (
            "DEBUG 01-27 22:06:26 [platforms/__init__.py:36] Checking if TPU platform is available.",
            "DEBUG",
            "platforms/__init__.py:36",
            "Checking if TPU platform is available.",
        ),
        (
            "ERROR 05-28 20:40:58 [core.py:400] RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
            "ERROR",
            "core.py:400",
            "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
        ),
        (
            "WARNING 06-19 10:49:55 [envs.py:2060] Unknown vLLM environment variable detected: VLLM_ROCM_W4A8_FP8_WMMA_MOE",
            "WARNING",
            "envs.py:2060",
            "Unknown vLLM environment variable detected: VLLM_ROCM_W4A8_FP8_WMMA_MOE",
        ),
    ],
)
def test_logger_line_eras(text, level, src, msg):
    v = pl(text)
    assert (v.level, v.src, v.msg) == (level, src, msg)
    assert v.proc is None and v.role is None and v.rank is None
    assert v.text == text and v.lineno == 7


@pytest.mark.parametrize(
    "text, proc, role, rank",
    [
        # V0 TP worker, raw ANSI tag as printed v0.4.2-v0.11.2 (corpus 002)
        (
            "\x1b[1;36m(VllmWorkerProcess pid=1825469)\x1b[0;0m INFO 11-18 17:10:57 selector.py:135] Using Flash Attention backend.",
            "VllmWorkerProcess",
            "worker",
            None,
        ),
        (
            "(VllmWorker rank=1 pid=12436) INFO 07-09 14:34:24 [shm_broadcast.py:264] vLLM message queue",
            "VllmWorker",
            "worker",
            1,
        ),
        (
            "(VllmWorker TP1 pid=1431) INFO 09-03 00:36:43 [shm_broadcast.py:289] vLLM message queue",
            "VllmWorker",
            "worker",
            1,
        ),
        (
            "(Worker_TP2_EP2 pid=211810) INFO 07-17 14:55:34 [compressed_tensors_wNa16.py:137] Using MarlinLinearKernel",
            "Worker_TP2_EP2",
            "worker",
            2,
        ),
        ("(Worker_PP1_TP0 pid=5) INFO 07-17 14:55:34 [gpu_worker.py:1] x", "Worker_PP1_TP0", "worker", 0),
        ("(Worker_DP1_TP0_EP1 pid=5) INFO 07-17 14:55:34 [gpu_worker.py:1] x", "Worker_DP1_TP0_EP1", "worker", 0),
        (
            "(EngineCore_DP0 pid=367) INFO 03-01 17:37:23 [backends.py:704] Dynamo bytecode transform time: 12.11 s",
            "EngineCore_DP0",
            "engine",
            None,
        ),
        (
            "(EngineCore pid=42887) ERROR 04-26 12:05:05 [core.py:1108] EngineCore failed to start.",
            "EngineCore",
            "engine",
            None,
        ),
        ("(APIServer pid=21) INFO 02-09 12:40:16 [utils.py:325] ", "APIServer", "api", None),
        # Ray: outer vLLM tag, Ray's nameless remote-actor tag (corpus 011)
        (
            "(EngineCore_0 pid=1159) (pid=345, ip=10.42.9.225) INFO 09-10 23:27:16 [__init__.py:241] "
            "Automatically detected platform cuda.",
            "ray",
            "ray",
            None,
        ),
        (
            "(EngineCore_0 pid=1159) (RayWorkerWrapper pid=1273, ip=10.42.9.225) INFO 09-10 23:27:16 [x.py:1] y",
            "RayWorkerWrapper",
            "ray",
            None,
        ),
        # RayWorkerProc (v0.20+) with vLLM's own inner tag: the inner one names the process
        (
            "(RayWorkerProc pid=9, ip=10.0.0.2) (Worker_TP1 pid=9) INFO 11-20 09:12:33 [gpu_worker.py:1] x",
            "Worker_TP1",
            "worker",
            1,
        ),
    ],
)
def test_process_tags(text, proc, role, rank):
    v = pl(text)
    assert (v.proc, v.role, v.rank) == (proc, role, rank)
    assert v.level in ("INFO", "ERROR")
    assert not v.msg.startswith("(")


def test_ray_repeated_suffix_removed():
    v = pl(
        "(EngineCore_0 pid=1159) (pid=345, ip=10.42.9.225) INFO 09-10 23:27:16 [__init__.py:241] "
        "Automatically detected platform cuda. [repeated 2x across cluster] (Ray deduplicates logs by "
        "default. Set RAY_DEDUP_LOGS=0 to disable log deduplication)"
    )
    assert v.msg == "Automatically detected platform cuda."


def test_uvicorn_lines_plain_and_tagged():
    v = pl("INFO:     Application startup complete.")
    assert (v.level, v.msg, v.src, v.ts, v.proc) == ("INFO", "Application startup complete.", None, None, None)
    v = pl("(APIServer pid=964305) INFO:     Application startup complete.")
    assert (v.level, v.msg, v.role) == ("INFO", "Application startup complete.", "api")


def test_junk_glued_before_level():
    # corpus 041 line 1, and a podman partial line glued onto the next boot's first line
    v = pl(
        "path string is NULLpath string is NULLINFO 08-16 12:15:13 [__init__.py:44] "
        "Available plugins for group vllm.platform_plugins:"
    )
    assert (v.level, v.src, v.msg) == ("INFO", "__init__.py:44", "Available plugins for group vllm.platform_plugins:")
    v = pl(
        "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:05<00:00,  1.48s/it]"
        "(APIServer pid=1) INFO 11-29 14:25:25 [api_server.py:1896] vLLM API server version 0.10.2"
    )
    assert (v.proc, v.role, v.msg) == ("APIServer", "api", "vLLM API server version 0.10.2")
    v = pl("tail-no-newline(APIServer pid=1) INFO:     Application startup complete.")
    assert (v.role, v.level, v.msg) == ("api", "INFO", "Application startup complete.")


def test_logging_prefix_before_level():
    v = pl("[frank] WARNING 10-02 09:53:01 [api_server.py:1] Default sampling parameters have been overridden")
    assert (v.level, v.msg) == ("WARNING", "Default sampling parameters have been overridden")


def test_timestamp_year_and_envelope_time():
    v = pl("INFO 12-31 23:59:58 [core.py:1] x", year=2025)
    assert v.ts == datetime(2025, 12, 31, 23, 59, 58)
    assert pl("INFO 12-31 23:59:58 [core.py:1] x", year=None).ts is None
    env = datetime(2026, 11, 29, 14, 25, 25, 111204, tzinfo=timezone.utc)
    assert pl("INFO 12-31 23:59:58 [core.py:1] x", year=2025, ts=env).ts == env  # the envelope wins
    assert pl("INFO 02-29 10:00:00 [core.py:1] x", year=2025).ts is None  # no such day: no time


def test_json_formatter_line():
    text = (
        '{"asctime": "2026-10-02 09:53:01,123", "levelname": "INFO", "name": "vllm.v1.core.kv_cache_utils", '
        '"processName": "EngineCore", "process": 270, "message": "GPU KV cache size: 398,658 tokens"}'
    )
    v = pl(text)
    assert (v.level, v.msg, v.proc, v.role) == ("INFO", "GPU KV cache size: 398,658 tokens", "EngineCore", "engine")
    assert v.ts == datetime(2026, 10, 2, 9, 53, 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "(",
        "(APIServer pid=",
        "INFO 99-99 99:99:99 [x:1] y",
        "\x1b[",
        "{bad json",
        '{"message": 5}',
        '  File "/x.py", line 3, in <module>',
        "é" * 10000,
    ],
)
def test_never_raises(text):
    v = pl(text)
    assert v.text == text
    assert isinstance(v.msg, str)


def test_traceback_body_keeps_indentation():
    v = pl('ERROR 05-28 20:40:58 [core.py:400]   File "/x/core.py", line 391, in run_engine_core')
    assert v.msg == '  File "/x/core.py", line 391, in run_engine_core'
    v = pl('(EngineCore_DP0 pid=367)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap')
    assert v.msg.startswith("  File") and v.role == "engine" and v.level is None


def test_absurd_rank_in_a_tag_is_no_rank():
    # a made-up tag must not give a rank no database integer holds (it once failed the store)
    v = parse_line(
        Record(
            1,
            "(Worker_TP99999999999999999999 pid=412) INFO 11-20 09:12:33 "
            "[gpu_worker.py:298] Available KV cache memory: 61.23 GiB",
        ),
        2026,
    )
    assert v.rank is None and v.role == "worker"
    assert parse_line(Record(1, "(Worker_TP3 pid=412) INFO 11-20 09:12:33 [x.py:1] hi"), 2026).rank == 3
