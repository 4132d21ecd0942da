"""GPU memory after ready, from the vendor tool on PATH: the seeds' "driver used 30.97 GiB of
31.86 — 0.89 GiB of real free VRAM per card".

    read("auto")  -> [GpuMem(index=0, used_gib=30.97, total_gib=31.86, free_gib=0.89), ...]
                     None when no tool is asked for ("none") or none is on PATH (not an error)
                     SourceError (one line) when the tool fails, hangs or prints garbage: the
                     caller turns it into a finding

The parsers are pure functions over the tools' text, one per tool:

* `rocm-smi --showmeminfo vram --json`: `{"card0": {"VRAM Total Memory (B)": "34342961152",
  "VRAM Total Used Memory (B)": "7028736"}, ...}`, bytes as strings;
* `amd-smi metric --mem-usage --json`: a list of `{"gpu": 0, "mem_usage": {"total_vram":
  {"value": 8176, "unit": "MB"}, "used_vram": ..., "free_vram": ...}}` (ROCm 6.x), or the same
  list under `{"gpu_data": [...]}` (later releases). amd-smi's "MB" is MiB: it divides bytes by
  1024*1024 (amdsmi_cli/amdsmi_commands.py);
* `nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits`:
  `0, 30970, 32607` per line, MiB; a card that cannot say prints `[N/A]`.

GiB are 2**30 bytes, the unit vLLM prints and the seeds use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from bootlog.errors import SourceError
from bootlog.read.podman import stop
from bootlog.safe import one_line

GIB = 1 << 30
MIB = 1 << 20
TOOLS = ("rocm-smi", "amd-smi", "nvidia-smi")  # the order `auto` tries them in
ARGV = {
    "rocm-smi": ["rocm-smi", "--showmeminfo", "vram", "--json"],
    "amd-smi": ["amd-smi", "metric", "--mem-usage", "--json"],
    "nvidia-smi": ["nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits"],
}
_MAX_OUTPUT = 4 << 20  # bytes: a memory report is a page; more is not one


@dataclass(frozen=True)
class GpuMem:
    """One card's memory in GiB (free = what the driver says is not in use)."""

    index: int
    used_gib: float
    total_gib: float
    free_gib: float


def _card(index: int, used_b: float, total_b: float, free_b: float | None = None) -> GpuMem:
    free = total_b - used_b if free_b is None else free_b
    return GpuMem(index, round(used_b / GIB, 3), round(total_b / GIB, 3), round(free / GIB, 3))


def _json(text: str, tool: str) -> Any:
    # rocm-smi can print a warning line before the JSON: start at the first bracket
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise SourceError(f"{tool} printed no JSON: {one_line(text, 80) or 'nothing'}")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[min(starts) :])
    except (json.JSONDecodeError, RecursionError) as err:
        raise SourceError(f"{tool} printed unreadable JSON ({one_line(err, 80)})") from None
    return data


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if v == v and v >= 0 else None
    if isinstance(v, str):
        try:
            n = float(v.strip())
        except ValueError:
            return None
        return n if n == n and n >= 0 else None
    return None


def parse_rocm_smi(text: str) -> list[GpuMem]:
    """`rocm-smi --showmeminfo vram --json` -> one GpuMem per `cardN` (SourceError if none)."""
    data = _json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise SourceError("rocm-smi: expected a JSON object of cards")
    cards = []
    for key, fields in data.items():
        m = re.fullmatch(r"card(\d+)", str(key))
        if not m or not isinstance(fields, dict):
            continue  # e.g. "system"
        total = _number(fields.get("VRAM Total Memory (B)"))
        used = _number(fields.get("VRAM Total Used Memory (B)"))
        if total is None or used is None or used > total:
            raise SourceError(
                f"rocm-smi: {key} has no readable VRAM total/used "
                f"({one_line(fields.get('VRAM Total Memory (B)'), 30)}, "
                f"{one_line(fields.get('VRAM Total Used Memory (B)'), 30)})"
            )
        cards.append(_card(int(m[1]), used, total))
    if not cards:
        raise SourceError("rocm-smi: no card with VRAM figures in its output")
    return sorted(cards, key=lambda c: c.index)


_AMD_UNITS = {"B": 1, "KB": 1 << 10, "KIB": 1 << 10, "MB": MIB, "MIB": MIB, "GB": GIB, "GIB": GIB}


def _amd_bytes(v: Any) -> float | None:
    """amd-smi's {"value": N, "unit": "MB"} as bytes ("N/A" and odd units: None)."""
    if not isinstance(v, dict):
        return None
    n = _number(v.get("value"))
    scale = _AMD_UNITS.get(str(v.get("unit", "")).strip().upper())
    return None if n is None or scale is None else n * scale


def parse_amd_smi(text: str) -> list[GpuMem]:
    """`amd-smi metric --mem-usage --json` (bare list or `{"gpu_data": [...]}`) -> GpuMem per gpu."""
    data = _json(text, "amd-smi")
    if isinstance(data, dict):
        data = data.get("gpu_data", [data] if "gpu" in data else None)
    if not isinstance(data, list):
        raise SourceError("amd-smi: expected a list of GPUs (or gpu_data)")
    cards = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("mem_usage"), dict):
            continue
        gpu = item.get("gpu")
        if not isinstance(gpu, int) or isinstance(gpu, bool):
            raise SourceError(f"amd-smi: a GPU entry without a number ({one_line(gpu, 30)})")
        mem = item["mem_usage"]
        total, used, free = (_amd_bytes(mem.get(k)) for k in ("total_vram", "used_vram", "free_vram"))
        if total is None or used is None or used > total:
            raise SourceError(
                f"amd-smi: gpu {gpu} has no readable total_vram/used_vram "
                f"({one_line(mem.get('total_vram'), 40)}, {one_line(mem.get('used_vram'), 40)})"
            )
        cards.append(_card(gpu, used, total, free))
    if not cards:
        raise SourceError("amd-smi: no GPU with mem_usage in its output")
    return sorted(cards, key=lambda c: c.index)


def parse_nvidia_smi(text: str) -> list[GpuMem]:
    """`nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits`."""
    cards = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            raise SourceError(f"nvidia-smi: not an 'index, used, total' line: {one_line(line, 80)}")
        used, total = _number(parts[1]), _number(parts[2])
        if used is None or total is None or used > total:
            raise SourceError(
                f"nvidia-smi: GPU {parts[0]} has no readable memory figures "
                f"({one_line(parts[1], 20)}, {one_line(parts[2], 20)})"
            )
        cards.append(_card(int(parts[0]), used * MIB, total * MIB))
    if not cards:
        raise SourceError("nvidia-smi printed no GPU")
    return sorted(cards, key=lambda c: c.index)


PARSERS = {"rocm-smi": parse_rocm_smi, "amd-smi": parse_amd_smi, "nvidia-smi": parse_nvidia_smi}


def pick(tool: str = "auto") -> str | None:
    """The tool `read` would run: `auto` -> the first of TOOLS on PATH, `none` -> None."""
    if tool == "none":
        return None
    if tool == "auto":
        return next((t for t in TOOLS if shutil.which(t)), None)
    if tool not in ARGV:
        raise SourceError(f"unknown GPU tool {tool!r} (auto, rocm-smi, amd-smi, nvidia-smi, none)")
    return tool


def _run(argv: list[str], timeout: float) -> str:
    """The tool's stdout. Output goes to temporary files (a tool that floods stdout cannot fill
    the memory: past _MAX_OUTPUT it is stopped), and the tool runs in a session of its own so a
    timeout kills its children too."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        except OSError as e:
            raise SourceError(f"cannot run {argv[0]}: {e.strerror or e}") from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if os.fstat(out.fileno()).st_size + os.fstat(err.fileno()).st_size > _MAX_OUTPUT:
                stop(proc)
                raise SourceError(f"{argv[0]} printed more than {_MAX_OUTPUT >> 20} MiB: not a memory report")
            if time.monotonic() >= deadline:
                stop(proc)
                raise SourceError(f"{argv[0]} did not answer within {timeout:g} s")
        out.seek(0)
        err.seek(0)
        text, errs = out.read(_MAX_OUTPUT + 1), err.read(_MAX_OUTPUT + 1)
    if len(text) + len(errs) > _MAX_OUTPUT:
        raise SourceError(f"{argv[0]} printed more than {_MAX_OUTPUT >> 20} MiB: not a memory report")
    if proc.returncode != 0:
        last = (
            next((ln for ln in reversed(errs.decode("utf-8", "replace").splitlines()) if ln.strip()), "")
            or text.decode("utf-8", "replace").strip()
        )
        raise SourceError(f"{argv[0]} failed (exit {proc.returncode}): {one_line(last, 120) or 'no message'}")
    return text.decode("utf-8", "replace")


def read(tool: str = "auto", timeout: float = 10) -> list[GpuMem] | None:
    """Every card's memory now, by `tool` (auto|rocm-smi|amd-smi|nvidia-smi|none). None when no
    tool is asked for or none is on PATH; SourceError (one line) when the tool fails or its
    output cannot be read. `auto` does not fall back to the next tool when the first one fails:
    a broken rocm-smi is worth a finding, not a silent switch."""
    name = pick(tool)
    if name is None:
        return None
    if shutil.which(name) is None:
        raise SourceError(f"{name} not found on PATH")
    return PARSERS[name](_run(ARGV[name], timeout))


def lower_free(a: list[GpuMem] | None, b: list[GpuMem] | None) -> list[GpuMem] | None:
    """Per card, the reading with less free memory: the seeds' figure is the one "held through a
    live generation", so a reading after the probe's generation that is lower replaces the one
    taken after ready. A card in one reading only is kept as read; None when both are None."""
    if a is None or b is None:
        return b if a is None else a
    by_index = {c.index: c for c in a}
    for c in b:
        if c.index not in by_index or c.free_gib < by_index[c.index].free_gib:
            by_index[c.index] = c
    return [by_index[i] for i in sorted(by_index)]


def figures(cards: list[GpuMem] | None) -> list[dict]:
    """The readings as metric rows of docs/figures.md (`gpu_used_gib`, `gpu_free_gib`, rank = card
    index; the caller maps cards to ranks when the container's device list says otherwise)."""
    rows = []
    for c in cards or []:
        rows.append({"name": "gpu_used_gib", "value": c.used_gib, "unit": "GiB", "rank": c.index})
        rows.append({"name": "gpu_free_gib", "value": c.free_gib, "unit": "GiB", "rank": c.index})
    return rows
