#!/usr/bin/env python3
"""Benchmark bootlog ingest against rg/grep on the same literal markers, as whole processes.

    python bench/run.py [--size-mb 64] [--runs 5] [--log FILE] [--boots-db 10000] [--boots-log 0] [--json OUT]

Measures (median of --runs, page cache warm, disk synced before each run, each run a fresh database):
  * `bootlog --db TMP ingest FILE` wall time, MB/s, peak RSS
  * `rg -cF -e M1 -e M2 … FILE` and `grep -cF -e …` with bootlog's own literal markers
    (bootlog.patterns.LITERALS + bootlog.boots.LITERALS), and the ratios ingest/rg, ingest/grep
  * re-ingest after appending 1 MiB (incremental; ratio to the full ingest), from the database of
    one full ingest put back before each run, median of 3x --runs (at least 15)
  rg, grep, ingest and re-ingest take turns, run by run (a slow spell of a shared VM falls on all)
  * `bootlog --help`
  * `bootlog diff last prev` on a database holding --boots-db boots
  * with --boots-log N: `bootlog ingest` of a log of N short boots and no runtime noise (a
    crash-looping server), whose memory grows with the number of boots
Needs ripgrep on PATH (`apt-get install -y ripgrep`); without it the rg rows are skipped.
Peak memory comes from GNU time (`/usr/bin/time -f %M`) when installed, else from os.wait4
(whose ru_maxrss never reads below this Python process's own ~35 MiB).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import genlog  # noqa: E402

# Used only when bootlog's own catalogue cannot be imported (e.g. benchmarking an old checkout).
FALLBACK_MARKERS = (
    "version", "non-default args", "LLM engine", "Loading weights took", "Model loading took",
    "torch.compile", "KV cache size", "Maximum concurrency", "Graph capturing finished",
    "init engine", "Application startup complete", "Avg prompt throughput", "Traceback",
    "out of memory", "Error", "gdn_hip",
)


def markers() -> tuple[list[str], str]:
    """bootlog's literal prefilter strings, and where they came from."""
    try:
        from bootlog import boots, patterns

        lits = list(dict.fromkeys([*patterns.LITERALS, *boots.LITERALS]))
        return [m for m in lits if m], "bootlog.patterns.LITERALS + bootlog.boots.LITERALS"
    except Exception as err:  # an unfinished checkout: measure with the documented markers
        return list(FALLBACK_MARKERS), f"fallback list ({type(err).__name__}: {err})"


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_once(argv: list[str], *, ok: tuple[int, ...] = (0,)) -> tuple[float, int, int, bytes]:
    """(wall seconds, peak RSS KiB, exit code, stdout) of one process.

    Peak RSS comes from GNU time (`-f %M`) when installed: a child forked straight from this
    Python process inherits its RSS high-water mark across exec, so wait4's ru_maxrss would
    never read below ~35 MiB.  Without /usr/bin/time that floor is in the numbers.
    """
    full = [GNU_TIME, "-f", "BENCH_MAXRSS_KIB=%M", *argv] if GNU_TIME else argv
    # bootlog reports its own peak and its reader process's (reader.py): both are resident at
    # once, while GNU time reports only the larger of the two
    env = dict(os.environ, BOOTLOG_BENCH_RSS="1")
    with tempfile.TemporaryFile() as errf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=errf, env=env)
        out = proc.stdout.read()  # drain before wait4 so a chatty child cannot block on a full pipe
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.stdout.close()
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    peak = usage.ru_maxrss
    if GNU_TIME:
        lines = err.rstrip().splitlines()
        if lines and lines[-1].startswith("BENCH_MAXRSS_KIB="):
            peak = int(lines[-1].split("=", 1)[1])
            err = "\n".join(lines[:-1])
        if rc and err.startswith("Command exited with non-zero status"):
            err = err.split("\n", 1)[-1]
    m = re.search(r"bootlog-bench: main_peak_rss_kib=(\d+) reader_peak_rss_kib=(\d+)", err)
    if m and int(m.group(2)):
        # the sum is an upper bound: pages the fork shares are counted in both
        peak = int(m.group(1)) + int(m.group(2))
    if rc not in ok:
        sys.stderr.write(f"bench: {' '.join(argv[:4])}... exited {rc}: {err[-400:]}\n")
    return wall, peak, rc, out


def median_run(argv_fn, runs: int, setup=None, ok: tuple[int, ...] = (0,), label: str = "") -> dict:
    """Median wall time and max peak RSS over `runs` runs; setup() runs before each, untimed."""
    job = {"argv": argv_fn, "setup": setup, "ok": ok, "repeat": 1}
    return interleaved({label or "run": job}, runs, quiet=not label)[label or "run"]


def interleaved(jobs: dict[str, dict], runs: int, quiet: bool = False) -> dict[str, dict]:
    """median_run for several commands taking turns: round k runs each job once (`repeat` times
    in a row for a job that asks), so a slow spell of this shared VM falls on all of them alike
    rather than on whichever ran then.  A job: argv(i) -> argv, setup(i) or None, ok, repeat."""
    got = {name: ([], [], 0, b"") for name in jobs}
    for k in range(runs):
        for name, job in jobs.items():
            for j in range(job.get("repeat", 1)):
                i = k * job.get("repeat", 1) + j
                if job.get("setup"):
                    job["setup"](i)
                # the disk idle at every start: a setup's writes or the run before's (a database)
                # are not flushed during a timed run
                os.sync()
                w, m, rc, out = run_once(job["argv"](i), ok=job.get("ok", (0,)))
                walls, rss, _, _ = got[name]
                walls.append(w)
                rss.append(m)
                got[name] = (walls, rss, rc, out)
    rows = {}
    for name, (walls, rss, rc, out) in got.items():
        ok = jobs[name].get("ok", (0,))
        if not quiet:
            print(f"bench: {name}: median {statistics.median(walls):.3f} s, peak {max(rss) / 1024:.0f} MiB, rc {rc}",
                  file=sys.stderr, flush=True)
        rows[name] = {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
                      "peak_rss_mib": max(rss) / 1024, "rc": rc, "ok": rc in ok,
                      "stdout": out.decode(errors="replace").strip()[:200]}
        if jobs[name].get("repeat", 1) > 1:
            rows[name]["runs"] = len(walls)
    return rows


def bootlog_argv() -> list[str]:
    """The installed console script beside this Python (not a version manager's shim found
    first on PATH: pyenv's is a shell script that costs ~40 ms a start), else the module."""
    beside = Path(sys.executable).parent / "bootlog"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    exe = shutil.which("bootlog")
    return [exe] if exe else [sys.executable, "-m", "bootlog.cli"]


def byte_compile() -> bool:
    """Write bootlog's .pyc files, as `pip install` does for an installed package: a checkout
    installed editable under PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module
    again at every start (~20 ms), which no installed copy does."""
    import compileall

    import bootlog

    return bool(compileall.compile_dir(os.path.dirname(bootlog.__file__), quiet=1))


def build_many_boots_db(db: str, n: int, log: str, samples_per_boot: int = 10) -> str:
    """A database with n boots: a generated log's boots saved n/k times through the store API,
    each copy with its own fingerprint (so they are distinct boots, as restarts are).

    Copies keep `samples_per_boot` stats samples: 10,000 boots with hours of stats lines each
    would be a 3+ GiB database whose build dominates the run, and diff reads no samples.
    """
    from bootlog.plain import replace

    from bootlog.store.db import open_db
    from bootlog.store.queries import SourceInfo, save_boots

    engine = open_db(db)
    how = ""
    try:
        from bootlog.ingest import parse_source
        from bootlog.sources import open_source

        template = parse_source(open_source(log))
        how = f"copies of the {len(template)} boots parsed from the generated log"
    except Exception as err:  # parser not importable yet: use the store's own realistic seed boot
        from bootlog.store.testing import seed_boot

        template = [seed_boot(0)]
        how = f"copies of store.testing.seed_boot ({type(err).__name__})"
    if not template:
        raise SystemExit("bench: the generated log produced no boots")
    src = SourceInfo("bench-many-boots.log", "file", container="frank-primary-qwen", host="bench")
    batch = []
    # rotate so the newest two copies are ready boots: `diff last prev` then compares two
    # healthy boots, the common case (a failed `last` makes diff exit 4 by contract)
    k = len(template)
    ready = [j for j, b in enumerate(template) if b.status == "ready"]
    offset = next((o for o in range(k) if (n - 1 + o) % k in ready and (n - 2 + o) % k in ready), 0)
    for i in range(n):
        b = template[(i + offset) % k]
        batch.append(replace(b, fingerprint=f"{b.fingerprint}-{i}", first_line=b.first_line + i * 100_000,
                             last_line=b.last_line + i * 100_000, samples=b.samples[:samples_per_boot]))
        if len(batch) == 500:
            save_boots(engine, src, batch)
            batch = []
    if batch:
        save_boots(engine, src, batch)
    engine.dispose()
    return how


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--log", help="use this log instead of generating one")
    ap.add_argument("--boots-db", type=int, default=10_000, help="boots in the database for the diff timing (0 = skip)")
    ap.add_argument("--boots-log", type=int, default=0,
                    help="also ingest a generated log of this many boots without noise (0 = skip)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bootlog-bench-"))
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                 "load_avg_at_start": os.getloadavg(),
                                 # set: every bootlog start compiles its modules again (~20 ms)
                                 "no_bytecode_cache": bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))},
                     "runs": a.runs, "byte_compiled": byte_compile()}
    try:
        log = Path(a.log) if a.log else tmp / f"gen-{a.size_mb:g}.log"
        if not a.log:
            t0 = time.perf_counter()
            genlog.generate(a.size_mb, str(log))
            results["generate_s"] = time.perf_counter() - t0
        size_mb = log.stat().st_size / 2**20
        results["log"] = {"path": str(log), "mib": round(size_mb, 1)}
        lits, origin = markers()
        results["markers"] = {"count": len(lits), "from": origin}
        eargs = [x for m in lits for x in ("-e", m)]
        bl = bootlog_argv()

        # warm the page cache so every tool reads from memory
        with open(log, "rb") as fh:
            while fh.read(1 << 24):
                pass

        rows: dict[str, dict] = {}
        rg = shutil.which("rg")
        if not rg:
            print("bench: ripgrep (rg) not found; apt-get install -y ripgrep", file=sys.stderr)

        # incremental: the database already holds the file (a full ingest of a copy of it); 1 MiB of
        # runtime noise is appended; every run starts from that database as the full ingest left it
        # (a copy put back, untimed). A run costs ~50 ms against ~1.5 s of setup for a new copy, and
        # this VM's jitter is a good part of 50 ms: so it is timed 3x as often as the others.
        grown, inc, saved = tmp / "grown.log", tmp / "inc.db", tmp / "inc-saved.db"
        noise = tmp / "noise.log"
        genlog.generate(1, str(noise), boots=1, seed=99)
        tail = noise.read_bytes()
        tail = tail[tail.index(b"Application startup complete.\n") + 30:][: 1 << 20]
        shutil.copyfile(log, grown)
        first = subprocess.run([*bl, "--db", str(inc), "ingest", str(grown)], capture_output=True)
        if first.returncode:
            sys.stderr.write(f"bench: first ingest failed: {first.stderr.decode(errors='replace')[-300:]}\n")
        with open(grown, "ab") as fh:
            fh.write(tail)
        shutil.copyfile(inc, saved)  # (bootlog closed it: no WAL beside it)

        def restore(i: int) -> None:
            shutil.copyfile(saved, inc)
            for side in ("-wal", "-shm"):
                Path(str(inc) + side).unlink(missing_ok=True)

        dbs = [tmp / f"ingest-{i}.db" for i in range(a.runs)]
        jobs = {"rg -cF": {"argv": lambda i: [rg, "-cF", *eargs, str(log)], "ok": (0, 1)}} if rg else {}
        jobs["grep -cF"] = {"argv": lambda i: ["grep", "-cF", *eargs, str(log)], "ok": (0, 1)}
        jobs["bootlog ingest"] = {"argv": lambda i: [*bl, "--db", str(dbs[i]), "ingest", str(log)]}
        jobs["re-ingest +1 MiB"] = {"argv": lambda i: [*bl, "--db", str(inc), "ingest", str(grown)],
                                    "setup": restore, "repeat": max(3, -(-15 // a.runs))}
        rows.update(interleaved(jobs, a.runs))
        rows["bootlog ingest"]["boots_line"] = rows["bootlog ingest"].pop("stdout")
        grown.unlink(missing_ok=True)

        rows["bootlog --help"] = median_run(lambda i: [*bl, "--help"], max(a.runs, 5), label="bootlog --help")

        if a.boots_db:
            many = tmp / "many.db"
            t0 = time.perf_counter()
            small = tmp / "template.log"
            genlog.generate(1, str(small), boots=6)
            results["many_boots_db"] = {"boots": a.boots_db, "built_from": build_many_boots_db(str(many), a.boots_db, str(small)),
                                        "build_s": round(time.perf_counter() - t0, 1),
                                        "mib": round(many.stat().st_size / 2**20, 1)}
            rows[f"diff last prev ({a.boots_db:,} boots)"] = median_run(
                lambda i: [*bl, "--db", str(many), "diff", "last", "prev"], a.runs, ok=(0, 3), label="diff")

        if a.boots_log:
            blog = tmp / f"boots-{a.boots_log}.log"
            genlog.generate(0, str(blog), boots=a.boots_log, noise_mb=0)
            results["boots_log"] = {"boots": a.boots_log, "mib": round(blog.stat().st_size / 2**20, 1)}
            bdbs = [tmp / f"boots-{i}.db" for i in range(a.runs)]
            rows[f"ingest {a.boots_log:,}-boot log"] = median_run(
                lambda i: [*bl, "--db", str(bdbs[i]), "ingest", str(blog)], a.runs, label="many-boot ingest")

        ing = rows["bootlog ingest"]["median_s"]
        for name, r in rows.items():
            out = r.pop("stdout", None)
            if name in ("rg -cF", "grep -cF"):
                r["matching_lines"] = out  # the two must agree: same markers, same file
        results["rows"] = rows
        results["derived"] = {
            "ingest_mb_per_s": round(size_mb / ing, 1),
            "ingest_over_rg": round(ing / rows["rg -cF"]["median_s"], 2) if "rg -cF" in rows else None,
            "ingest_over_grep": round(ing / rows["grep -cF"]["median_s"], 2),
            "reingest_over_full": round(rows["re-ingest +1 MiB"]["median_s"] / ing, 3),
        }
        print(render(results))
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=2))
    finally:
        if a.keep:
            print(f"(kept {tmp})", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def render(res: dict) -> str:
    size = res["log"]["mib"]
    out = [f"log: {size} MiB ({res['log']['path']}), markers: {res['markers']['count']} from {res['markers']['from']}",
           f"machine: {res['machine']['cpus']} CPUs, Python {res['machine']['python']}; median of {res['runs']} runs"
           + ("; PYTHONDONTWRITEBYTECODE set" + ("; bootlog byte-compiled first, as pip installs it"
                                                      if res.get("byte_compiled") else " (no .pyc cache)")
              if res["machine"].get("no_bytecode_cache") else ""), "",
           "| what | median s | min s | max s | peak RSS MiB | MB/s |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in res["rows"].items():
        mbps = f"{size / r['median_s']:.1f}" if name in ("rg -cF", "grep -cF", "bootlog ingest") else ""
        name = name if "runs" not in r else f"{name} ({r['runs']} runs)"
        name = name if r["ok"] else f"{name} (FAILED rc={r['rc']})"
        out.append(f"| {name} | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | {r['peak_rss_mib']:.0f} | {mbps} |")
    counts = {n: r.get("matching_lines") for n, r in res["rows"].items() if "matching_lines" in r}
    if counts:
        out.append("")
        out.append("matching lines: " + ", ".join(f"{n} {c}" for n, c in counts.items()))
    d = res["derived"]
    out += ["", f"ingest / rg: {d['ingest_over_rg']}x   ingest / grep: {d['ingest_over_grep']}x   "
                f"ingest: {d['ingest_mb_per_s']} MB/s   re-ingest(+1 MiB) / full ingest: {d['reingest_over_full']}"]
    if "boots_log" in res:
        b = res["boots_log"]
        out.append(f"many-boot log: {b['boots']:,} boots, {b['mib']} MiB, no runtime noise")
    if "many_boots_db" in res:
        m = res["many_boots_db"]
        out.append(f"diff DB: {m['boots']:,} boots ({m['built_from']}), {m['mib']} MiB, built in {m['build_s']} s")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
