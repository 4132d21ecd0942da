"""The post-deploy hook: wait for the boot that is starting now, store it, judge it.

wait -> ingest -> check (plan) + diff (previous boot of the same container) -> summary.
The container is only ever read (inspect, events, logs): never stopped, restarted or touched.

Which boot is "the one starting now": the container's run that was current when the hook was
started (or the next one, if it started between runs), bounded by podman's `init` events
(every record of a boot is later than its init and than the previous boot's `died`,
docs/podman.md); StartedAt can trail the first record, so it is only a fallback, widened by a
margin.  A run that ends while the hook waits (even if the engine restarts the container at
once) is the deploy's outcome; the last boot the parser finds in the run is the one taken.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from bootlog.read import podman
from bootlog.errors import BootlogError, SourceError
from bootlog.figures import FIGURES
from dataclasses import dataclass, field
from bootlog.render.bursts import gdn_summary
from bootlog.records import Boot
from bootlog.safe import md_code, md_text, term
from bootlog.judge.verdict import Verdict, judge

TERMINAL = ("ready", "failed")
# lifecycle states in which the container is between two runs: keep waiting
BETWEEN_RUNS = ("created", "configured", "initialized", "restarting", "stopping")
STARTED_AT_MARGIN_NS = 2 * 10**9
EVENT_LOOKBACK_NS = 7 * 24 * 3600 * 10**9
SETTLE_S = 10.0  # after a fatal line, how long to let the traceback finish before reading


class HookTimeout(BootlogError):
    """The boot neither became ready nor failed in time."""


class NoNewBoot(BootlogError):
    """The container's last run had ended before the hook started, and no new one began: there
    is no boot starting now to judge (the earlier run's verdict is not this deploy's)."""


# a run that ended this little before the hook started is the deploy's all the same: `podman
# run -d` returns once the container runs, and a start that dies at once (a flag the argument
# parser refuses) can be over before the hook's first look
RECENT_EXIT_NS = 5 * 10**9


@dataclass
class Waited:
    """What the wait saw: the boot as parsed from the container's current run."""

    container: str
    outcome: str  # ready | failed | exited (the run ended before ready, no failure line)
    boot: Boot | None
    since_ns: int | None  # lower bound of the run's records
    waited_s: float
    state: podman.State | None = None
    data: bytes = b""  # the run's `logs --timestamps` bytes read while waiting


def parse_bytes(data: bytes) -> list[Boot]:
    """Boots in `podman logs --timestamps` bytes, parsed exactly as ingest parses a source."""
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import bytes_source

    return parse_source(bytes_source("-", data))


@dataclass
class Run:
    """One run of the container: records are later than `since` and earlier than `until`."""

    since: int | None  # exclusive lower bound (ns), None = from the log's start
    until: int | None  # the next run's start, None while this is the latest run
    ended_before: bool = False  # it had already stopped when the hook was started
    ended_at: int | None = None  # then: when it died (ns), where the engine said


def pick_run(name: str, st: podman.State, ref_ns: int, engine: str = "podman") -> Run:
    """The run that was current when the hook started (`ref_ns`), else the first one after.

    Boundaries are podman's `init` events: every record of a run is later than its init and
    than the previous run's `died` (docs/podman.md).  Without events (docker has no init; an event
    log that cannot be read), StartedAt widened by a margin stands in.
    """
    lookback = min(ref_ns, st.started_at or ref_ns) - EVENT_LOOKBACK_NS
    try:
        evs = podman.events(name, since=lookback, engine=engine)
    except SourceError:
        evs = []  # events unreadable (journald backend without access, docker quirks): fall back
    evs = [e for e in evs if not st.id or (e.get("ID") or e.get("id") or st.id) == st.id]
    inits = [e["time_ns"] for e in evs if e["status"] == "init"]
    if not inits:  # docker's start can trail the first record: widen it
        inits = [e["time_ns"] - STARTED_AT_MARGIN_NS for e in evs if e["status"] == "start"]
    if not inits:
        ended = not st.running and st.finished_at is not None and st.finished_at <= ref_ns
        return Run(
            st.started_at - STARTED_AT_MARGIN_NS if st.started_at else None,
            None,
            ended_before=ended,
            ended_at=st.finished_at if ended else None,
        )
    return choose_run(inits, [e["time_ns"] for e in evs if e["status"] == "died"], ref_ns)


def choose_run(inits: list[int], died: list[int], ref_ns: int) -> Run:
    """Among runs starting at `inits` (ns, ascending) and ending at `died`: the one running at
    `ref_ns`, else the first to start after it, else the last one (ended before `ref_ns`)."""
    before = [t for t in inits if t <= ref_ns]
    after = [t for t in inits if t > ref_ns]
    if before and not any(before[-1] < d <= ref_ns for d in died):
        start = before[-1]  # running when the hook started
    elif after:
        start = after[0]  # the hook started between runs: the next run is the deploy's
    else:
        return Run(
            before[-1], None, ended_before=True, ended_at=next((d for d in died if before[-1] < d <= ref_ns), None)
        )
    return Run(start, next((t for t in inits if t > start), None))


def wait_for_boot(
    name: str,
    *,
    timeout: float = 900,
    poll: float = 2.0,
    engine: str = "podman",
    ref_ns: int | None = None,
    parse: Callable[[bytes], list[Boot]] = parse_bytes,
    progress: Callable[[str], None] | None = None,
) -> Waited:
    """Poll the run of the container that was current when the hook started (`ref_ns`, default
    now) until its boot is ready or failed, the run ends, or `timeout` seconds pass
    (HookTimeout).  Raises SourceError for a missing container or engine."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    ref_ns = ref_ns if ref_ns is not None else podman.now_ns()
    # right after `systemctl restart` the new container may not exist yet, and a run that had
    # ended when the hook started may be the old container of a redeploy whose new run is
    # seconds away: give both a moment before calling the container missing or the old run it
    grace_end = t0 + min(timeout, max(2.0, 2 * poll))
    run: Run | None = None
    cursor = podman.Cursor()
    data = b""
    boot: Boot | None = None
    fatal_at: float | None = None
    last_said = ""

    def say(msg: str) -> None:
        nonlocal last_said
        if progress and msg != last_said:
            progress(term(msg, one_line=True))
            last_said = msg

    def done(outcome: str) -> Waited:
        return Waited(name, outcome, boot, run.since if run else None, time.monotonic() - t0, st, data)

    # a podman call that hangs (a held storage lock) must not outlive --timeout either
    with podman.deadline(timeout):
        while True:
            # records stamped after this instant are left for the next poll: a run that starts
            # after the events below were read must not leak its lines into this one
            snap = podman.now_ns()
            try:
                st = podman.state(name, engine=engine)
            except SourceError as err:
                if run is not None and str(err).startswith("no such container"):
                    # the run we followed ended and its container was removed (--rm, a systemd
                    # unit's rm + run): its outcome is what was read of it
                    return done(_outcome(boot))
                if not str(err).startswith("no such container") or time.monotonic() >= grace_end:
                    raise
                say(f"{name} does not exist (yet); waiting briefly for it")
                time.sleep(max(0.0, min(poll, grace_end - time.monotonic())))
                continue
            now_run = pick_run(name, st, ref_ns, engine)
            if now_run.ended_before and time.monotonic() < grace_end:
                say(f"{name} had stopped when the hook started; waiting briefly for a new run")
            elif now_run.ended_before and (now_run.ended_at is None or ref_ns - now_run.ended_at > RECENT_EXIT_NS):
                # no run began since: the last one is an earlier deploy's, not this one's to judge
                raise NoNewBoot(
                    f"no new boot of {name} started",
                    container=name,
                    ended_at=now_run.ended_at,
                    exit_code=st.exit_code,
                    ref_ns=ref_ns,
                )
            elif st.status in BETWEEN_RUNS and not st.running and now_run.until is None:
                if st.status == "created" and never_started(name, engine):
                    return done("never_started")
                say(f"{name} is {st.status}; waiting for it to run")
            else:
                if run is None or now_run.since != run.since:
                    run, data, boot = now_run, b"", None
                    cursor = podman.Cursor(run.since, 0) if run.since is not None else podman.Cursor()
                run.until = now_run.until
                ended = run.until is not None or not st.running
                try:
                    new, cursor = podman.read_new(name, cursor, until=run.until or snap, final=ended, engine=engine)
                except SourceError as err:
                    # removed between the look above and this read (--rm right at the exit): the
                    # run's outcome is what was read of it
                    if not str(err).startswith("no such container"):
                        raise
                    return done(_outcome(boot))
                if new:
                    data += new
                    boot = _last(parse(data))
                if ended:
                    return done(_outcome(boot))
                if boot is not None and boot.status == "ready":
                    return done("ready")
                if boot is not None and boot.status == "failed":
                    # the process is dying: let it finish its traceback (or exit) first
                    fatal_at = fatal_at or time.monotonic()
                    if time.monotonic() - fatal_at >= min(SETTLE_S, max(0.0, deadline - time.monotonic())):
                        return done("failed")
                say(f"waiting for {name} to finish booting ({_progress_note(boot)})")
            if time.monotonic() >= deadline:
                raise HookTimeout(
                    f"timed out after {timeout:g} s waiting for {name} to finish booting", container=name, boot=boot
                )
            time.sleep(max(0.0, min(poll, deadline - time.monotonic())))


def never_started(name: str, engine: str = "podman") -> bool:
    """The container was created and cleaned up again without ever running: the runtime could
    not start its command (`podman run` exit 127, "executable file not found"). podman keeps no
    trace of why but these events (create, cleanup; no init, no start); waiting for it would
    only wait the whole timeout."""
    try:
        evs = podman.events(name, since=podman.now_ns() - EVENT_LOOKBACK_NS, engine=engine)
    except SourceError:
        return False
    said = [e["status"] for e in evs]
    last = max((i for i, x in enumerate(said) if x == "create"), default=-1)
    return last >= 0 and "cleanup" in said[last:] and not {"init", "start"} & set(said[last:])


def _last(boots: list[Boot]) -> Boot | None:
    return boots[-1] if boots else None


def _outcome(boot: Boot | None) -> str:
    """How a run that ended went: its boot's status, or "exited" (died before either)."""
    if boot is not None and boot.status in TERMINAL:
        return boot.status
    return "exited"


def _progress_note(boot: Boot | None) -> str:
    if boot is None:
        return "no vLLM line yet"
    return f"{boot.last_line - boot.first_line + 1} lines so far"


# ---------------------------------------------------------------------------------- the hook


@dataclass
class HookResult:
    container: str
    outcome: str
    boot_id: int | None
    show: dict | None  # the stored boot, `show --json` shape
    prev_id: int | None
    check: dict | None
    diff: dict | None
    waited_s: float
    exit: int
    notes: list[str] = field(default_factory=list)
    measured: dict | None = None  # what was measured after ready: probe, GPU memory (measure())
    verdict: Verdict | None = None  # the word and its reasons (verdict.judge)


def run_hook(
    store,
    name: str,
    *,
    plan=None,
    timeout: float = 900,
    poll: float = 2.0,
    engine: str = "podman",
    ref_ns: int | None = None,
    progress: Callable[[str], None] | None = None,
    probe_url: str | None = None,
    probe_tokens: int = 32,
    gpu_smi: str = "auto",
) -> HookResult:
    """Wait for the container's current boot, ingest it with its deploy context, measure it
    once ready (probe_url, gpu_smi: measure()), check it and diff it with the previous boot of
    the same container.  Exit code: 4 failed boot or hard violation, 3 drift, else 0."""
    from bootlog.judge import compare
    from bootlog.run.ingest import deploy_of
    from bootlog.run.judged import diff_previous, previous_boot
    from bootlog.store.reads import show_boot

    try:
        waited = wait_for_boot(name, timeout=timeout, poll=poll, engine=engine, ref_ns=ref_ns, progress=progress)
    except NoNewBoot as err:
        raise _no_new_boot(store, name, err, engine) from None
    notes: list[str] = []
    # the engine's word on the run the hook followed, read at once: a restart would replace it
    deploy = deploy_of(name, engine, plan)
    if (
        deploy is not None
        and waited.state is not None
        and waited.state.id
        and deploy.get("container_id") not in (None, waited.state.id)
    ):
        deploy = None  # another container of that name by now (rm + run): not this boot's
    if waited.outcome == "never_started":
        v = Verdict(4, "FAILED", [f"{name} never started"])
        return HookResult(name, waited.outcome, None, None, None, None, None, waited.waited_s, v.code, notes, verdict=v)
    stored = _ingest_run(store, name, waited, engine=engine, plan=plan, deploy=deploy)
    ours = _match(stored, waited.boot)
    if ours is None:
        notes.append(f"no vLLM boot found in {name}'s current run")
        v = judge(None)
        return HookResult(name, waited.outcome, None, None, None, None, None, waited.waited_s, v.code, notes, verdict=v)
    show = show_boot(store, ours.id)
    measured = None
    if show["boot"]["status"] == "ready" and not show["boot"].get("failure") and waited.outcome == "ready":
        measured = measure(
            probe_url,
            served_name=_served_name(show),
            tokens=probe_tokens,
            gpu_smi=gpu_smi,
            timeout=max(5.0, min(60.0, timeout)),
            progress=progress,
        )
        if measured["metrics"]:
            from bootlog.store.write import add_measured

            add_measured(store, ours.id, measured["metrics"])
            show = show_boot(store, ours.id)
        if measured["server_metrics"] is not None:
            from bootlog.measure.server_metrics import dtype_disagreement

            # (the KV pool's disagreement is stored, so judged from the store: verdict.boot_problem)
            said = dtype_disagreement(measured["server_metrics"], show)
            if said:
                measured["problems"].append(said)
        notes.extend([*measured["problems"], *measured["notes"]])
    if waited.outcome == "exited" and show["boot"]["status"] != "failed":
        # (a container restarted meanwhile shows its new run's state: no code then)
        code = waited.state.exit_code if waited.state and not waited.state.running else None
        notes.append(
            "the container stopped"
            + (f" (exit code {code})" if code is not None else "")
            + " before the boot was ready"
        )

    # the previous boot of this container *on this host* (as last/prev resolve): a fleet's hosts
    # share one database, and another host's run of the same unit is not this deploy's baseline
    prev_id = previous_boot(store, show["boot"])
    if plan is not None and plan.patterns:
        from bootlog.run.reread import STORED

        show["plan_lines"] = STORED  # just read with the plan: a pattern without a value matched nothing
        bad = {up.name: up.not_numbers[0] for up in plan.patterns if up.not_numbers}
        if bad:  # ... or a value that is no number: check says so
            show["plan_not_numbers"] = bad
    check = compare.check(show, plan) if plan is not None else None
    diff = None
    if prev_id is not None:
        show, diff = diff_previous(store, show, prev_id, plan)
    else:
        notes.append(f"first boot of {name} in the database: nothing to diff against")

    # the one rule (verdict.py): a failed boot, an engine that died serving, a run that stopped
    # before ready, gdn_hip state faults; then the plan and the diff; a ready server that fails
    # its probe is worth a look (DRIFT)
    v = judge(
        show,
        results=[(f"plan {plan_name(plan)}", check), (f"against #{prev_id}", diff)],
        exited=waited.outcome == "exited",
        problems=(measured or {}).get("problems") or (),
    )
    return HookResult(
        name, waited.outcome, ours.id, show, prev_id, check, diff, waited.waited_s, v.code, notes, _public(measured), v
    )


def _no_new_boot(store, name: str, err: NoNewBoot, engine: str) -> NoNewBoot:
    """The NoNewBoot line, saying when the last run ended and which boot is the latest: the
    container's runs are stored first (as `ingest --container` would), so it is that run's."""
    from bootlog.store.reads import list_boots

    try:
        ingest_container(store, name, engine=engine, deploy=None)
    except BootlogError:
        pass  # (what is stored already still says which boot is the latest)
    ended, ref, code = err.data.get("ended_at"), err.data.get("ref_ns"), err.data.get("exit_code")
    when = f"{_ago((ref - ended) / 1e9)} before the hook started" if ended and ref else "before the hook started"
    boots = list_boots(store, container=name)
    if boots:
        b = boots[-1]
        state = b["status"] + (f" ({b['failure']})" if b.get("failure") else "")
        from bootlog.run.reread import log_clock

        started = log_clock(store, {"boot": b}).stamp(b.get("started_at")) or "?"  # (with its zone)
        latest = f"the latest boot is #{b['id']} ({state}, started {started})"
    else:
        latest = "no boot of it is stored"
    code_text = f" with exit code {code}" if isinstance(code, int) else ""
    return NoNewBoot(
        f"no new boot of {name} started: its last run ended{code_text} {when}; {latest}",
        container=name,
        latest=boots[-1]["id"] if boots else None,
    )


def _ago(secs: float) -> str:
    if secs < 120:
        return f"{secs:.0f} s"
    if secs < 7200:
        return f"{secs / 60:.0f} min"
    return f"{secs / 3600:.1f} h" if secs < 172800 else f"{secs / 86400:.1f} days"


def _served_name(show: dict) -> str | None:
    """The name the server answers to: --served-model-name (its first), else the model."""
    cfg = show.get("config") or {}
    name = cfg.get("served_model_name")
    if isinstance(name, list):
        name = name[0] if name else None
    if isinstance(name, str) and name.startswith("[") and name.endswith("]"):
        inner = name[1:-1].split(",")[0].strip().strip("'\"")  # stored as vLLM printed a list
        name = inner or None
    return name or cfg.get("model") or show["boot"].get("model")


def measure(
    probe_url: str | None,
    *,
    served_name: str | None,
    tokens: int = 32,
    gpu_smi: str = "auto",
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """After ready: GPU memory, the probe (/health, /v1/models, one streamed completion), GPU
    memory again (the operator's "held through a live generation": the lower free value is
    kept).  {"metrics": [Metric], "probe": ProbeResult|None, "gpu_tool": str|None,
    "problems": [one line each]}.  Never raises for what the server or a GPU tool does."""
    from bootlog.measure import gpumem
    from bootlog.records import Metric

    problems: list[str] = []
    notes: list[str] = []
    tool = gpumem.pick(gpu_smi)

    def gpu() -> list | None:
        if tool is None:
            return None
        try:
            return gpumem.read(tool)
        except BootlogError as err:
            problems.append(f"GPU memory: {err}")
            return None

    before = gpu()
    result = None
    if probe_url:
        from bootlog.measure import probe

        if progress:
            progress(f"probing {probe_url}")
        result = probe.probe(probe_url, served_name=served_name, tokens=tokens, timeout=timeout)
        from bootlog.safe import one_line

        problems.extend(f"probe of {one_line(probe_url, 80)}: {p}" for p in result.problems)
        notes.extend(f"probe of {one_line(probe_url, 80)}: {p}" for p in result.notes)
    after = gpu() if result is not None and before is not None else None
    server = None
    if probe_url:
        # the server's own counters and KV pool, once, after the probe (its requests counted)
        from bootlog.measure import probe, server_metrics
        from bootlog.safe import one_line

        text, why = probe.scrape_metrics(probe_url, timeout=min(10.0, timeout))
        if text is not None:
            server = server_metrics.read(text)
        # (a proxy that serves no /metrics is no fault of the deploy: a note, not a finding)
        notes.extend(f"/metrics of {one_line(probe_url, 80)}: {p}" for p in why)
    cards = gpumem.lower_free(before, after)
    metrics = [
        Metric(n, v, "s" if n.endswith("_s") else "tok/s", pattern="measured:probe")
        for n, v in (result.figures.items() if result else ())
    ]
    metrics += [
        Metric(r["name"], r["value"], r["unit"], rank=r["rank"], pattern="measured:gpu") for r in gpumem.figures(cards)
    ]
    if server is not None:
        from bootlog.measure.server_metrics import FIGURES

        metrics += [Metric(n, v, FIGURES[n][0], pattern="measured:metrics") for n, v in server.figures.items()]
    return {
        "metrics": metrics,
        "probe": result,
        "gpu_tool": tool,
        "problems": problems,
        "notes": notes,
        "server_metrics": server,
    }


def _public(measured: dict | None) -> dict | None:
    """measure()'s result as JSON: what was asked, what it answered, what went wrong."""
    if measured is None:
        return None
    pr = measured["probe"]
    return {
        "probe": None
        if pr is None
        else {
            "figures": pr.figures,
            "model": pr.model,
            "route": pr.route,
            "tokens": pr.tokens,
            "problems": pr.problems,
            "notes": pr.notes,
        },
        "gpu_tool": measured["gpu_tool"],
        "gpu": [{"rank": m.rank, m.name: m.value} for m in measured["metrics"] if m.name == "gpu_free_gib"],
        "server_metrics": None
        if measured.get("server_metrics") is None
        else {**measured["server_metrics"].figures, "cache_dtype": measured["server_metrics"].cache_dtype},
        "problems": measured["problems"],
        "notes": measured["notes"],
    }


def ingest_container(
    store,
    name: str,
    *,
    engine: str = "podman",
    plan=None,
    host: str | None = None,
    source=None,
    deploy: dict | None = None,
) -> list:
    """ingest.ingest() of the container's whole log (parse all, one transaction, idempotent), or
    of `source`, bytes already read of it, stored as the container's all the same, with the
    deploy context the hook read (`deploy`; None: none that is this run's).

    Its source is the one `watch --container` uses (`ENGINE:NAME`), so a boot watch stored while
    it was starting is found again by the store and updated in place."""
    from bootlog.run.ingest import ingest

    return list(
        ingest(store, None, container=name, container_engine=engine, plan=plan, host=host, source=source, deploy=deploy)
    )


def _ingest_run(
    store, name: str, waited: Waited, *, engine: str = "podman", plan=None, deploy: dict | None = None
) -> list:
    """ingest_container(), unless the container the hook followed is gone or was replaced by
    another of the same name (a crash loop of `rm` + `run`): then the bytes read while waiting,
    stored as that container's source all the same."""
    if waited.state is not None and waited.data:
        try:
            now = podman.state(name, engine=engine)
        except SourceError as err:
            if not str(err).startswith("no such container"):
                raise
            now = None
        from bootlog.read.sources import bytes_source

        src = bytes_source(f"{engine}:{name}", waited.data, kind="container")
        if now is None or (waited.state.id and now.id != waited.state.id):
            return ingest_container(store, name, engine=engine, plan=plan, source=src, deploy=deploy)
        try:
            return ingest_container(store, name, engine=engine, plan=plan, deploy=deploy)
        except SourceError as err:
            # removed between the look above and `podman logs` (--rm right after the exit)
            if not str(err).startswith("no such container"):
                raise
            return ingest_container(store, name, engine=engine, plan=plan, source=src, deploy=deploy)
    return ingest_container(store, name, engine=engine, plan=plan, deploy=deploy)


def _match(stored: list, boot: Boot | None) -> Any:
    """The stored boot that is the one we waited for: same fingerprint, else same start time
    (a fingerprint still moves while a boot is young), else the newest.  None when the run
    printed no vLLM line: the newest stored boot is then an earlier run's."""
    if not stored or boot is None:
        return None
    if boot is not None:
        for same in (
            lambda s: boot.fingerprint and s.boot.fingerprint == boot.fingerprint,
            lambda s: boot.started_at and s.boot.started_at == boot.started_at,
        ):
            found = [s for s in stored if same(s)]
            if found:
                return found[-1]
    return stored[-1]


# ------------------------------------------------------------------------------- the summary

KEY_FIGURES = tuple((f.name, f.key, f.unit) for f in FIGURES if f.key)  # (metric, label, unit shown)


def key_figures(show: dict) -> dict[str, Any]:
    """The figures a deploy note quotes: one value, or a list when ranks differ."""
    from bootlog.judge.compare import figures

    fig = figures(show)
    out: dict[str, Any] = {}
    for name, _, _ in (*KEY_FIGURES, ("max_concurrency_request_tokens", "", "")):
        by_rank = fig.get(name)
        if not by_rank:
            continue
        vals = [
            int(v) if float(v).is_integer() else v  # counts print as 398658, not 398658.0
            for _, vs in sorted(by_rank.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
            for v in vs
        ]
        out[name] = vals[0] if len(set(vals)) == 1 else vals
    return out


def _fmt(v: Any, unit: str) -> str:
    from bootlog.render.render import fmt_value

    if isinstance(v, list):
        return " / ".join(_fmt(x, unit) for x in v) + " (per rank)"
    text = fmt_value(v)
    return f"{text}x" if unit == "x" else f"{text} {unit}"


def _headline(r: HookResult) -> str:
    if r.show is None and r.outcome == "never_started":
        return (
            f"{r.container} never started: the container runtime could not run its command "
            f"(`podman start {r.container}` says why)"
        )
    if r.show is None:
        return f"{r.container}: {r.outcome}, no vLLM boot found"
    b = r.show["boot"]
    if b["status"] == "failed":
        return f"{r.container} boot #{r.boot_id} failed ({b.get('failure') or 'other'})"
    if b.get("failure"):
        return f"{r.container} boot #{r.boot_id} ready, then its engine died ({b['failure']})"
    if r.outcome == "exited":
        return f"{r.container} boot #{r.boot_id} {b['status']}: the container stopped before the boot was ready"
    return f"{r.container} boot #{r.boot_id} {b['status']} ({b.get('vllm_version') or '?'}, {b.get('model') or '?'})"


def _figure_lines(figs: dict[str, Any], show: dict | None = None) -> list[tuple[str, str]]:
    rows = []
    b = (show or {}).get("boot") or {}
    if b.get("status") == "failed":
        rows.append(("root cause", b.get("failure_message") or "no error line found"))
    elif b.get("failure"):
        rows.append(("died serving", b.get("failure_message") or b["failure"]))
    events = (show or {}).get("events") or []
    rows += [("crash loop", e["message"]) for e in events if e["kind"] == "crash_loop"]
    burst = gdn_summary(events)
    if burst:
        rows.append(("gdn_hip", burst))
    for name, label, unit in KEY_FIGURES:
        if name in figs:
            text = _fmt(figs[name], unit)
            if name == "max_concurrency" and "max_concurrency_request_tokens" in figs:
                text += f" for {_fmt(figs['max_concurrency_request_tokens'], 'tokens')} per request"
            rows.append((label, text))
    dep = (show or {}).get("deploy") or {}
    if dep.get("image") or dep.get("image_digest"):
        digest = dep.get("image_digest")
        rows.append(
            (
                "image",
                (dep.get("image") or "?")
                + (f" ({digest[:19]}…)" if digest and digest not in (dep.get("image") or "") else ""),
            )
        )
    if dep.get("restart_count"):
        rows.append(("restarts", str(dep["restart_count"])))
    return rows


def _verdict(r: HookResult) -> str:
    return r.verdict.word if r.verdict is not None else str(r.exit)


def _why(r: HookResult) -> list[str]:
    """The verdict's reasons (a probe that failed says DRIFT even where check and diff found no
    drift): one line each, most serious first."""
    return list(r.verdict.reasons) if r.verdict is not None else []


def _why_rows(r: HookResult) -> list[str]:
    """The reasons the headline does not say already (a failed start, an engine that died
    serving, a run that stopped before ready: the headline and the root cause row say those)."""
    b = (r.show or {}).get("boot") or {}
    said = b.get("status") == "failed" or bool(b.get("failure")) or r.show is None
    return [
        w for w in _why(r) if not (said and w == _why(r)[0]) and w != "the container stopped before the boot was ready"
    ]


def plan_name(plan) -> str:
    path = getattr(plan, "path", None)
    return path.name if path is not None else "plan"


def _md(s: str, inline: bool = True) -> str:
    # (mid-sentence: "CUDA graphs -0.05 GiB" keeps its minus, "4.21 s" its dot)
    return md_text(s, one_line=True, inline=inline)


def render_text(r: HookResult, plan_name: str | None = None) -> str:
    """The summary for a terminal or a journal: what the log said is escaped, one line each."""
    from bootlog.render import render

    lines = [f"bootlog hook: {_verdict(r)}: {_headline(r)}  (waited {r.waited_s:.1f} s)"]
    lines += [f"  {'why':<14} {why}" for why in _why_rows(r)]
    if r.show is not None:
        for label, text in _figure_lines(key_figures(r.show), r.show):
            first, *more = str(text).split("\n")  # (a root cause continued on indented lines)
            lines.append(f"  {label:<14} {first}")
            lines += [f"  {'':<14} {m}" for m in more]
    lines = [term(ln, one_line=True) for ln in [*lines, *(f"  note: {n}" for n in r.notes)]]
    if r.check is not None:
        lines += ["", render.render_text(r.check, plan_name=plan_name, show_same=False)]
    if r.diff is not None:
        # (what changed leads, as in `bootlog diff`: rows without enough history are counted)
        lines += [
            "",
            render.render_text(r.diff, show_same=False, show_unknown=False, hidden_how="bootlog diff --all lists them"),
        ]
    return "\n".join(lines).rstrip()


def render_markdown(r: HookResult, plan_name: str | None = None) -> str:
    """For a deploy commit message: the measured figures first, then findings tables; log text
    is inert there (no HTML, link or code span of it comes alive)."""
    from bootlog.render import render

    lines = [f"**bootlog hook: {_verdict(r)}** — {_md(_headline(r))}", ""]
    if _why_rows(r):
        lines += ["Why: " + "; ".join(_md(w) for w in _why_rows(r)), ""]
    if r.show is not None:
        b = r.show["boot"]
        if b["status"] == "failed":
            lines.append(
                "Root cause: "
                + " ".join(md_code(part) for part in (b.get("failure_message") or "no error line found").split("\n"))
            )
        figs = _figure_lines(key_figures(r.show), {"deploy": r.show.get("deploy"), "events": r.show.get("events")})
        if figs:
            lines.append(
                "MEASURED on the live deploy: "
                + ", ".join(f"{label} {_md(text)}" for label, text in figs)
                + f" (boot #{r.boot_id}, container {_md(r.container)})."
            )
    lines += [f"- {_md(n, inline=False)}" for n in r.notes]  # (a list item's start: "1. " would nest a list)
    if r.check is not None:
        lines += ["", render.render_markdown(r.check, plan_name=plan_name)]
    if r.diff is not None:
        lines += ["", render.render_markdown(r.diff, show_unknown=False, hidden_how="bootlog diff --all lists them")]
    return "\n".join(lines).rstrip()


def error_json(container: str, err: BootlogError) -> dict:
    """to_json's shape for a hook that ended in an error: verdict TIMEOUT or ERROR, the message."""
    boot = getattr(err, "data", {}).get("boot")
    kind = "timeout" if isinstance(err, HookTimeout) else "no_new_boot" if isinstance(err, NoNewBoot) else "error"
    return {
        "container": container,
        "verdict": kind.upper(),
        "outcome": kind,
        "exit": int(err.exit),
        "why": [str(err)],
        "waited_s": None,
        "boot": None,
        "figures": {},
        "prev": None,
        "check": None,
        "diff": None,
        "measured": None,
        "deploy": None,
        "notes": [str(err)] + ([f"last seen: {_progress_note(boot)}"] if boot is not None else []),
    }


def to_json(r: HookResult) -> dict:
    return {
        "container": r.container,
        "verdict": _verdict(r),
        "why": _why(r),
        "outcome": r.outcome,
        "exit": r.exit,
        "waited_s": round(r.waited_s, 3),
        "boot": (r.show or {}).get("boot"),
        "figures": key_figures(r.show) if r.show else {},
        "prev": r.prev_id,
        "check": r.check,
        "diff": r.diff,
        "notes": r.notes,
        "measured": r.measured,
        "deploy": (r.show or {}).get("deploy"),
    }
