"""Issue 22, the log-reading side: per-rank failures, GPU hard faults, the engine's own later
statement of a setting, partial and odd input, wordings of logs never seen before."""

from __future__ import annotations

from pathlib import Path

from bootlog.run.ingest import parse_source
from bootlog.read.sources import open_source

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
SEED = LOGS / "seed"


def boots_of(path: Path) -> list:
    return parse_source(open_source(str(path)))


def test_a_failure_printed_by_each_rank_is_an_event_per_rank():
    # UTIL 1.00: both workers, still "(Worker pid=N)" (no TP tag), refuse their device
    for b in boots_of(SEED / "05-util-1.00-crash-loop.log"):
        ve = [e for e in b.events if e.kind == "value_error"]
        assert sorted(e.rank for e in ve) == [0, 1]
        assert sorted(e.detail["device"] for e in ve) == ["cuda:0", "cuda:1"]
        assert b.status == "failed" and b.failure == "value_error"


def test_the_same_failure_text_from_two_rankless_workers_is_two_events(tmp_path):
    # the v0.9.1-v0.13 wording names no device: two workers' identical lines are still two faults
    p = tmp_path / "no-device.log"
    p.write_bytes(
        (SEED / "05-util-1.00-crash-loop.log")
        .read_bytes()
        .replace(b"device cuda:0 ", b"device ")
        .replace(b"device cuda:1 ", b"device ")
    )
    for b in boots_of(p):
        assert len([e for e in b.events if e.kind == "value_error"]) == 2


ROCM_FAULT = (
    "2026-10-02T15:21:12.104482151Z Memory access fault by GPU node-2 (Agent handle: 0x55d5d6f0a590) on "
    "address 0x7f3a1c000000. Reason: Page not present or supervisor privilege.\n"
)
CUDA_FAULT = (
    "".join(
        f"2026-10-02T15:21:17.5{i:02d}Z (Worker_TP1 pid=236) ERROR 10-02 08:21:17 [multiproc_executor.py:703] {t}\n"
        for i, t in enumerate(
            [
                "WorkerProc hit an exception.",
                "Traceback (most recent call last):",
                '  File "/app/vllm/vllm/v1/worker/gpu_model_runner.py", line 2519, in execute_model',
                "    torch.cuda.synchronize()",
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                "stacktrace below might be incorrect.",
            ]
        )
    )
    + "2026-10-02T15:21:17.600Z (EngineCore pid=178) ERROR 10-02 08:21:17 [core.py:1002] RuntimeError: Worker failed "
    "with error 'CUDA error: an illegal memory access was encountered', please check the stack trace above\n"
)


def seed_lines(name: str, upto: int, tail: str = "") -> bytes:
    lines = (SEED / name).read_bytes().split(b"\n")
    return b"\n".join(lines[:upto]) + b"\n" + tail.encode()


def test_a_gpu_hard_fault_before_ready_fails_the_boot_with_that_line(tmp_path):
    # shape D killed by ROCm's fault while capturing graphs: no Python exception follows
    p = tmp_path / "fault.log"
    p.write_bytes(seed_lines("01-shape-d-fp8-200704x3.log", 190, ROCM_FAULT))
    (b,) = boots_of(p)
    assert (b.status, b.failure) == ("failed", "engine_init_failed")
    assert b.failure_message == ROCM_FAULT.split("Z ", 1)[1].strip()
    (ev,) = [e for e in b.events if e.kind == "gpu_fault"]
    assert ev.detail == {
        "node": 2,
        "agent": "0x55d5d6f0a590",
        "address": "0x7f3a1c000000",
        "reason": "Page not present or supervisor privilege",
    }
    # a CUDA fault raised as an exception after engine init, re-raised by the engine: one fault
    p.write_bytes(seed_lines("01-shape-d-fp8-200704x3.log", 196, CUDA_FAULT))
    (b,) = boots_of(p)
    assert (b.status, b.failure) == ("failed", "engine_init_failed")
    assert b.failure_message == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    assert [(e.rank, e.detail["reason"]) for e in b.events if e.kind == "gpu_fault"] == [
        (1, "an illegal memory access was encountered")
    ]


def test_a_gpu_hard_fault_after_ready_is_a_runtime_death(tmp_path):
    p = tmp_path / "fault.log"
    # (stamped after line 241's 15:21:48: a line stamped before it would be another run's)
    p.write_bytes(seed_lines("01-shape-d-fp8-200704x3.log", 241, ROCM_FAULT.replace("15:21:12", "15:21:50")))
    (b,) = boots_of(p)
    assert b.status == "ready" and b.failure == "other"
    assert b.failure_message.startswith("Memory access fault by GPU node-2")


def test_the_engine_s_later_statement_of_a_setting_wins(tmp_path):
    # shape F: the API server sizes the batch at 2048; the engine's config update (the hybrid
    # model's 3136-token attention block) states it again, and that is what it ran with
    lines = (SEED / "03-shape-f-mnbt2048-graph-pinned.log").read_bytes().split(b"\n")
    at = next(i for i, ln in enumerate(lines) if b"(EngineCore pid=179)" in ln and b"LLM engine" in ln)
    engine = (
        b"2026-10-03T14:42:02.813351227Z (EngineCore pid=179) INFO 10-03 07:42:02 [scheduler.py:239] "
        b"Chunked prefill is enabled with max_num_batched_tokens=3136."
    )
    p = tmp_path / "f.log"
    p.write_bytes(b"\n".join(lines[: at + 1] + [engine] + lines[at + 1 :]))
    (b,) = boots_of(p)
    assert b.config["max_num_batched_tokens"] == "3136"
    # the API server's (or an untagged process's) own repeat does not replace the first statement
    p.write_bytes(
        b"\n".join(lines[: at + 1] + [engine.replace(b"EngineCore pid=179", b"APIServer pid=1")] + lines[at + 1 :])
    )
    (b,) = boots_of(p)
    assert b.config["max_num_batched_tokens"] == "2048"


def test_cr_only_line_ends_are_read_as_lines(tmp_path):
    # 014 (a failed boot, then a ready one) saved with old-Mac line ends: "\r" between lines
    lf = (LOGS / "014-v0.10.2-nohup-multiboot.log").read_bytes().replace(b"\r", b"")
    (tmp_path / "lf.log").write_bytes(lf)
    (tmp_path / "cr.log").write_bytes(lf.replace(b"\n", b"\r"))
    want = boots_of(tmp_path / "lf.log")
    assert [b.status for b in want] == ["failed", "ready"]
    assert boots_of(tmp_path / "cr.log") == want
    # CRLF keeps working, and a lone progress bar redrawn with "\r" is not taken for lines
    (tmp_path / "crlf.log").write_bytes(lf.replace(b"\n", b"\r\n"))
    assert boots_of(tmp_path / "crlf.log") == want
    from bootlog.read.envelope import _cr_only

    assert not _cr_only(b"".join(b"\rLoading: %d%%|###| %d/100" % (i, i) for i in range(100)))


def test_a_truncated_gz_keeps_the_boots_before_the_cut(tmp_path):
    import gzip
    import json
    import zlib

    from click.testing import CliRunner

    from bootlog.cli import cli

    # the night ladder (4 boots) gzipped and cut inside boot 4: boots 1-3 are whole before the cut
    data = (SEED / "09-night-ladder-4-boots.log").read_bytes()
    gz = gzip.compress(data)
    boot4 = sum(len(ln) + 1 for ln in data.split(b"\n")[:1009])
    cut = next(
        n for n in range(len(gz) // 2, len(gz), 512) if len(zlib.decompressobj(31).decompress(gz[:n])) > boot4 + 2000
    )
    bad = tmp_path / "ladder.log.gz"
    bad.write_bytes(gz[:cut])
    db = str(tmp_path / "b.db")
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(bad)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    got = len(zlib.decompressobj(31).decompress(gz[:cut]).split(b"\n")) - 1  # whole lines before it
    assert r.stderr == (f"bootlog: {bad}: truncated gzip: stopped at line {got:,}; the boots before it are stored\n")
    boots = json.loads(CliRunner().invoke(cli, ["--db", db, "list", "--json"]).output)
    assert [(b["status"], b["failure"]) for b in boots] == [
        ("failed", "oom"),
        ("failed", "oom"),
        ("ready", None),
        ("incomplete", None),
    ]
    whole = boots_of(SEED / "09-night-ladder-4-boots.log")
    assert [(b["first_line"], b["last_line"]) for b in boots[:3]] == [(b.first_line, b.last_line) for b in whole[:3]]
    assert boots[3]["first_line"] == whole[3].first_line and boots[3]["last_line"] == got
    # cut before any whole boot: nothing is stored and it stays an error; corrupt stays corrupt
    bad.write_bytes(gz[:200])
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "c.db"), "ingest", str(bad)])
    assert r.exit_code == 1 and "truncated gzip" in r.stderr
    bad.write_bytes(gz[:40] + b"\xff" * 400 + gz[440:])
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "c.db"), "ingest", str(bad)])
    assert r.exit_code == 1 and "corrupt gzip" in r.stderr


def test_a_log_that_starts_mid_boot_keeps_that_boot(tmp_path):
    # a rotated or `--since` log whose lead-in has no figures: the failure or the ready line it
    # holds is still a boot (before, only a lead-in with figures or stats lines was kept)
    for name, frac, want in (
        ("038-v0.19.1-oom-engine-failed", 0.1, ("failed", "oom")),
        ("022-v0.13.0-oom-engine-failed", 0.3, ("failed", "oom")),
        ("044-v0.23.0-engine-failed", 0.3, ("failed", "engine_init_failed")),
        ("034-v0.17.1-memsuit", 0.3, ("ready", None)),
    ):
        lines = (LOGS / f"{name}.log").read_bytes().split(b"\n")
        p = tmp_path / f"{name}.log"
        p.write_bytes(b"\n".join(lines[int(len(lines) * frac) :]))
        (b,) = boots_of(p)
        assert (b.status, b.failure) == want, name
    # a few stray vLLM lines before the first start are not a boot of their own
    lines = (LOGS / "014-v0.10.2-nohup-multiboot.log").read_bytes().split(b"\n")
    p.write_bytes(b"\n".join(lines[150:]))
    assert [b.status for b in boots_of(p)] == ["ready"]


def test_two_offline_llm_runs_in_one_script_are_two_boots(tmp_path):
    # before v0.10.2 an offline LLM() prints no non-default args: the second engine process's
    # config line (same process name, new pid) is the next boot, not more of the first
    lines = (LOGS / "027-rocm-gfx1201-v0.14.0rc1-ok.log").read_bytes().split(b"\n")[3:-1]
    body = [ln for ln in lines if b"non-default args" not in ln]
    p = tmp_path / "two.log"
    p.write_bytes(b"\n".join(body + [ln.replace(b"pid=370", b"pid=371") for ln in body]) + b"\n")
    one, two = boots_of(p)
    assert two.first_line > one.last_line >= len(body) - 1
    for b in (one, two):
        assert [m.value for m in b.metrics if m.name == "kv_cache_tokens"] == [1856]
        assert b.config["max_model_len"] == "1024"
