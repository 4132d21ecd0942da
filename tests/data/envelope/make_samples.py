"""Rebuild the envelope samples in this folder from the verbatim output in
/work/shared/reference/podman.md (podman 4.3.1, conmon 2.1.6).

podman.md prints lines cut to 110 characters through `cat -A`; the full bytes are rebuilt from
what it states: the input file (first stdout line / tab line / empty / non-UTF-8 / CRLF /
"long:" + 20000 x "A" + ":END" / "last line without newline" with no newline) and the message
length of every record (8117 P, 8192 P, 3700 F in the second run; 8105 P, 8192 P, 3712 F in the
first). Run: python tests/data/envelope/make_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
LONG = b"long:" + b"A" * 20000 + b":END"
FIRST5 = [b"first stdout line", b"tab\there  two spaces  ", b"", b"non-utf8: \xff\xfe caf\xe9 end", b"crlf line\r"]


def raw(ts: str, stream: str, tag: str, msg: bytes) -> bytes:
    return f"{ts} {stream} {tag} ".encode() + msg + b"\n"


def mix_run2_k8s() -> bytes:
    t1, t2, t3, t4 = (
        "2026-11-29T14:25:19.320146538+00:00",
        "2026-11-29T14:25:19.320280229+00:00",
        "2026-11-29T14:25:19.320297090+00:00",
        "2026-11-29T14:25:19.320307961+00:00",
    )
    out = b"".join(raw(t1, "stdout", "F", m) for m in FIRST5)
    out += raw(t1, "stdout", "P", LONG[:8117])
    out += raw(t2, "stdout", "P", LONG[8117 : 8117 + 8192])
    out += raw(t3, "stderr", "F", b"to stderr")
    out += raw(t4, "stdout", "F", LONG[8117 + 8192 :])
    out += raw(t4, "stdout", "F", b"last line without newline")
    out += raw(t4, "stdout", "F", b"after stderr")
    return out


def mix_run1_k8s() -> bytes:
    # podman.md shows this run from the long line on; the five lines before it are the same
    # input, given the timestamp of an earlier read here.
    t0 = "2026-11-29T14:17:53.708100000+00:00"
    t1, t2, t3, t4, t5 = (
        "2026-11-29T14:17:53.708214482+00:00",
        "2026-11-29T14:17:53.708359504+00:00",
        "2026-11-29T14:17:53.708386374+00:00",
        "2026-11-29T14:17:53.708661951+00:00",
        "2026-11-29T14:17:53.708680586+00:00",
    )
    out = b"".join(raw(t0, "stdout", "F", m) for m in FIRST5)
    out += raw(t1, "stdout", "P", LONG[:8105])
    out += raw(t2, "stdout", "P", LONG[8105 : 8105 + 8192])
    out += raw(t3, "stdout", "F", LONG[8105 + 8192 :])
    out += raw(t3, "stdout", "P", b"last line without newline")
    out += raw(t4, "stdout", "F", b"")
    out += raw(t4, "stdout", "F", b"after stderr")
    out += raw(t5, "stderr", "F", b"to stderr")
    return out


def k8s_to_podman_t(data: bytes, streams: tuple[str, ...] = ("stdout", "stderr")) -> bytes:
    """What `podman logs -t` (4.3.1) prints for a k8s-file log: UTC "Z" time before EVERY
    record, P records without their newline. Both streams given = the `2>&1` output."""
    out = []
    for line in data.split(b"\n")[:-1]:
        ts, stream, tag, msg = line.split(b" ", 3)
        if stream.decode() not in streams:
            continue
        z = ts.decode().replace("+00:00", "Z")
        out.append(z.encode() + b" " + msg + (b"\n" if tag == b"F" else b""))
    return b"".join(out)


RESTARTS_K8S = b"""2026-11-29T14:25:25.111204057+00:00 stdout F boot up 773.45 466.66
2026-11-29T14:25:25.111204057+00:00 stdout P tail-no-newline
2026-11-29T14:25:25.111315365+00:00 stderr F boot err
2026-11-29T14:25:27.019282075+00:00 stdout F boot up 775.36 466.70
2026-11-29T14:25:27.019282075+00:00 stdout P tail-no-newline
2026-11-29T14:25:27.019573281+00:00 stderr F boot err
2026-11-29T14:25:28.888388847+00:00 stdout F boot up 777.23 466.72
2026-11-29T14:25:28.888388847+00:00 stdout P tail-no-newline
2026-11-29T14:25:28.888735257+00:00 stderr F boot err
"""

# podman.md "podman logs -t boots 2>&1", verbatim
RESTARTS_T_2TO1 = b"""2026-11-29T14:25:25.111204057Z boot up 773.45 466.66
2026-11-29T14:25:25.111204057Z tail-no-newline2026-11-29T14:25:25.111315365Z boot err
2026-11-29T14:25:27.019282075Z boot up 775.36 466.70
2026-11-29T14:25:27.019282075Z tail-no-newline2026-11-29T14:25:27.019573281Z boot err
2026-11-29T14:25:28.888388847Z boot up 777.23 466.72
2026-11-29T14:25:28.888388847Z tail-no-newline2026-11-29T14:25:28.888735257Z boot err
"""

SLOW_K8S = b"""2026-11-29T14:25:20.436989717+00:00 stdout F tick 1
2026-11-29T14:25:20.437102618+00:00 stderr F err 1
2026-11-29T14:25:21.438088399+00:00 stdout F tick 2
2026-11-29T14:25:21.438320845+00:00 stderr F err 2
2026-11-29T14:25:22.440473834+00:00 stdout F tick 3
2026-11-29T14:25:22.440503159+00:00 stderr F err 3
2026-11-29T14:25:23.442154919+00:00 stdout P bye
"""

TTY_K8S = (
    b"2026-11-29T14:25:36.934037593+00:00 stdout F tty out\r\n2026-11-29T14:25:36.934037593+00:00 stdout F tty err\r\n"
)


def main() -> None:
    files = {
        "k8s_mix_run2.log": mix_run2_k8s(),
        "k8s_mix_run1.log": mix_run1_k8s(),
        "podman_t_mix_run2.stdout": k8s_to_podman_t(mix_run2_k8s(), ("stdout",)),
        "podman_t_mix_run2.stderr": k8s_to_podman_t(mix_run2_k8s(), ("stderr",)),
        "podman_t_mix_run1_2to1.log": k8s_to_podman_t(mix_run1_k8s()),
        "k8s_restarts.log": RESTARTS_K8S,
        "podman_t_restarts_2to1.log": RESTARTS_T_2TO1,
        "podman_t_restarts.stdout": k8s_to_podman_t(RESTARTS_K8S, ("stdout",)),
        "k8s_slow.log": SLOW_K8S,
        "podman_t_slow.stdout": k8s_to_podman_t(SLOW_K8S, ("stdout",)),
        "k8s_tty.log": TTY_K8S,
    }
    # `journalctl -u …` text of a container on podman's journald driver (identifier = the
    # container name, pid = conmon's), first 60 lines of corpus 057, and the -o short-iso form
    src = Path("/work/shared/corpus/raw/057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log")
    lines = src.read_bytes().split(b"\n")[:60]
    files["journalctl_short.log"] = (
        b"-- Journal begins at Sun 2026-11-01 00:00:01 UTC, ends at Sun 2026-11-29 14:26:00 UTC. --\n"
        + b"".join(
            b"Nov 29 14:25:%02d dankserver frank-primary-qwen[2345]: " % (i % 60) + x + b"\n"
            for i, x in enumerate(lines)
        )
    )
    files["journalctl_short_iso.log"] = b"".join(
        b"2026-11-29T14:25:%02d+0000 dankserver frank-primary-qwen[2345]: " % (i % 60) + x + b"\n"
        for i, x in enumerate(lines)
    )
    assert files["podman_t_restarts_2to1.log"] == k8s_to_podman_t(RESTARTS_K8S)
    for name, data in files.items():
        (HERE / name).write_bytes(data)

    # docker json-file: the same mixed input as Docker writes it (16 KiB pieces, no "\n" on
    # all but the last piece of a line), stderr landing between the pieces.
    t = "2026-11-29T14:25:19.320146538Z"
    lines = [json.dumps({"log": m.decode("utf-8", "replace") + "\n", "stream": "stdout", "time": t}) for m in FIRST5]
    lines.append(json.dumps({"log": LONG[:16384].decode(), "stream": "stdout", "time": t}))
    lines.append(json.dumps({"log": "to stderr\n", "stream": "stderr", "time": "2026-11-29T14:25:19.3202971Z"}))
    lines.append(
        json.dumps({"log": LONG[16384:].decode() + "\n", "stream": "stdout", "time": "2026-11-29T14:25:19.320307961Z"})
    )
    lines.append(
        json.dumps(
            {
                "log": "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO 11-29 14:25:20 "
                "[api_server.py:1] vLLM API server version 0.22.69\n",
                "stream": "stdout",
                "time": "2026-11-29T14:25:20Z",
            }
        )
    )
    (HERE / "docker_mix.json.log").write_text("\n".join(lines) + "\n")

    # journalctl -o json for the journald-driver container (podman.md: MESSAGE with its "\n",
    # PRIORITY 6/3, CONTAINER_PARTIAL_MESSAGE=true; the 20 KB line as 16297 + 3713 bytes).
    def entry(us: int, msg, prio: str, partial: bool = False) -> str:
        d = {
            "__REALTIME_TIMESTAMP": str(us),
            "PRIORITY": prio,
            "MESSAGE": msg,
            "CONTAINER_NAME": "jd",
            "SYSLOG_IDENTIFIER": "jd",
            "_COMM": "conmon",
        }
        if partial:
            d["CONTAINER_PARTIAL_MESSAGE"] = "true"
        return json.dumps(d)

    base = 1_795_961_927_216_224  # 2026-11-29T14:18:47.216224Z
    jl = [
        entry(base, "hello journald\n", "6"),
        entry(base + 685, "journald err\n", "3"),
        entry(base + 900, list(FIRST5[3] + b"\n"), "6"),
        entry(base + 1000, LONG[:16297].decode(), "6", partial=True),
        entry(base + 1100, LONG[16297:].decode() + "\n", "6"),
        entry(base + 3142, "no nl", "6"),
    ]
    (HERE / "journal.json.log").write_text("\n".join(jl) + "\n")


if __name__ == "__main__":
    main()
