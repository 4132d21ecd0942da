"""Failures: the words that make a line part of one (tracebacks, wrappers, deaths), the kind a
root cause is (classify), and the figures an error line carries (an OOM's requested and free
memory, a start-up ValueError's free and total memory, the KV cache a max_model_len needs).
boots.py follows a boot's tracebacks and decides its failure with these."""

from __future__ import annotations

import re
from typing import Any

from bootlog.parse.hits import compile_rx

TB_START = "Traceback (most recent call last)"
CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Exhausted|Failure)\b(?::.*)?$")
WRAPPER = re.compile(
    r"initialization failed|See root cause above|See stack trace \(above\)|EngineDeadError|"
    r"failed to start|WorkerProc hit an exception|Worker failed with error|died unexpectedly|"
    r"EngineCore encountered"
)
RUNTIME_FATAL = re.compile(
    r"EngineDeadError|EngineCore encountered a fatal error|died unexpectedly|"
    r"Engine core proc\S* \S+ died"
)
# a process death before ready: the boot died even when no exception names a cause
DIED = re.compile(r"died unexpectedly|\bdied with exit code|\bpid \d+ died, exit code|Engine core proc\S* \S+ died")
INIT_WRAPPER = "initialization failed. See root cause above"
OOM = re.compile(
    r"out of memory|OutOfMemoryError|RESOURCE_EXHAUSTED|hipErrorOutOfMemory|"
    r"not enough GPU memory|OUT_OF_DEVICE_MEMORY",
    re.I,
)
PYDANTIC = re.compile(r"ValidationError: \d+ validation errors? for ")
# argparse refusing the run line (`vllm serve --bogus`, exit 2): a start that failed before the
# server printed anything of its own; argparse's own shape, `PROG: error: MESSAGE`
ARG_ERROR = re.compile(r"(?:vllm(?: serve)?|[\w.-]+\.py): error: \S")
GPU_FAULT = re.compile(
    r"Memory access fault by GPU node-|an illegal memory access was encountered|"
    r"unspecified launch failure|unhandled cuda error"
)
KV_INSUFFICIENT = "KV cache is needed, which is larger than the available KV cache memory"
KV_INSUFFICIENT_V0 = "is larger than the maximum number of tokens that can be stored in KV cache"


def classify(msg: str, engine_done: bool, runtime: bool = False) -> str:
    if OOM.search(msg):
        return "oom"
    if GPU_FAULT.search(msg):  # docs/figures.md: a GPU fault before ready fails the engine's start
        return "other" if runtime else "engine_init_failed"
    if msg.startswith("ValueError"):
        return "value_error"
    if msg.startswith(("KeyboardInterrupt", "SystemExit")):
        return "other"
    return "other" if engine_done else "engine_init_failed"


# MiB per unit as PyTorch ("50.00 MiB", "0 bytes") and JAX ("2.64G") print them
_MIB = {
    "": 1 / 2**20,
    "b": 1 / 2**20,
    "bytes": 1 / 2**20,
    "k": 1 / 1024,
    "kib": 1 / 1024,
    "m": 1.0,
    "mib": 1.0,
    "g": 1024.0,
    "gib": 1024.0,
    "t": 1024.0**2,
    "tib": 1024.0**2,
}
_OOM_MARKERS = (
    "out of memory",
    "OutOfMemoryError",
    "hipErrorOutOfMemory",
    "cudaErrorMemoryAllocation",
    "RESOURCE_EXHAUSTED",
    "Tried to allocate",
)
_TRIED = compile_rx(r"Tried to allocate (?P<n>\d+(?:\.\d+)?) ?(?P<u>[KMGT]iB|bytes|B)\b")
_FREE = compile_rx(
    r"(?:of which (?P<n1>\d+(?:\.\d+)?) ?(?P<u1>[KMGT]iB|bytes|B) (?:is )?free"
    r"|(?P<n2>\d+(?:\.\d+)?) ?(?P<u2>[KMGT]iB|bytes|B) free)"
)
_TOTAL = compile_rx(r"total capacity of (?P<n>\d+(?:\.\d+)?) ?(?P<u>[KMGT]iB)")
_JAX_ALLOC = compile_rx(r"Attempting to allocate (?P<n>\d+(?:\.\d+)?)(?P<u>[KMGT]?)B?\b")
_JAX_FREE = compile_rx(r"There are (?P<n>\d+(?:\.\d+)?)(?P<u>[KMGT]?)B? free")


def _mib(n: str, unit: str) -> float:
    return round(float(n) * _MIB[unit.lower()], 4)


def oom_detail(text: str) -> dict | None:
    """{"requested_mib", "free_mib", "total_gib"?} from an out-of-memory line; None otherwise.

    PyTorch: "Tried to allocate 50.00 MiB ... 0 bytes free" / "... of which 350.00 MiB is free"
    ("1.02 GiB" -> 1044.48 MiB); HIP/CUDA driver errors give no figures ({}); JAX:
    "Attempting to allocate 2.64G. ... There are 1.30G free."
    """
    if not any(m in text for m in _OOM_MARKERS):
        return None
    out: dict[str, float] = {}
    if m := _TRIED.search(text):
        out["requested_mib"] = _mib(m["n"], m["u"])
        if f := _FREE.search(text, m.end()):
            out["free_mib"] = _mib(f["n1"], f["u1"]) if f["n1"] else _mib(f["n2"], f["u2"])
        if t := _TOTAL.search(text):
            out["total_gib"] = round(float(t["n"]) * _MIB[t["u"].lower()] / 1024, 4)
    elif m := _JAX_ALLOC.search(text):
        out["requested_mib"] = _mib(m["n"], m["u"])
        if f := _JAX_FREE.search(text):
            out["free_mib"] = _mib(f["n"], f["u"])
    return out


_FREE_ON_DEVICE = compile_rx(
    r"(?:Free memory on device(?: (?P<device>[^\s(]+))?|Available memory on node (?P<node>\d+)) "
    r"\((?P<free>\d+(?:\.\d+)?)/(?P<total>\d+(?:\.\d+)?) GiB"
)
_DESIRED = compile_rx(
    r"on startup is less than (?:desired [GC]PU memory utilization|the engine's budget[^(]*)"
    r"\s*\((?P<util>\d+(?:\.\d+)?), (?P<requested>\d+(?:\.\d+)?) GiB\)"
)
# the CPU backend, when the KV pool is allocated: "... is less than requested memory for kv (64.0
# GiB)" (an explicit size) or "(-0.2/5.89 GiB)" (what the worker's share left for it)
_KV_REQUESTED = compile_rx(
    r"on kv cache allocation is less than requested memory for kv "
    r"\((?P<requested>-?\d+(?:\.\d+)?)(?:/(?P<share>\d+(?:\.\d+)?))? GiB\)"
)


def value_error_detail(text: str) -> dict | None:
    """{"free_gib", "total_gib", "gpu_memory_utilization"?, "requested_gib"?, "device"?, "node"?}
    from the start-up ValueError "Free memory on device (64.38/79.19 GiB) on startup is less than
    desired GPU memory utilization (0.9, 71.27 GiB)" (v0.14+ adds the device: "on device cuda:0
    (...)"), or the CPU backend's "Available memory on node 0 (21.65/23.54 GiB) on startup is less
    than desired CPU memory utilization (0.92, 21.66 GiB)" and "... on kv cache allocation is less
    than requested memory for kv (64.0 GiB)".  None for other lines, including the INFO "... on
    startup. Desired GPU memory ..." summary."""
    m = _FREE_ON_DEVICE.search(text)
    if not m or not ("is less than" in text or "ValueError" in text):
        return None
    out: dict[str, Any] = {"free_gib": float(m["free"]), "total_gib": float(m["total"])}
    if d := _DESIRED.search(text, m.end()):
        out["gpu_memory_utilization"] = float(d["util"])
        out["requested_gib"] = float(d["requested"])
    elif k := _KV_REQUESTED.search(text, m.end()):
        out["requested_gib"] = float(k["requested"])
    if m["device"]:
        out["device"] = m["device"]
    if m["node"]:
        out["node"] = int(m["node"])
    return out


_KV_NEEDED = compile_rx(
    r"max seq len \((?P<len>\d+)\), \((?P<needed>\d+(?:\.\d+)?) Gi?B KV cache is needed, which is larger than "
    r"the available KV cache memory \((?P<avail>-?\d+(?:\.\d+)?) Gi?B\)\."
    r"(?:\s*Based on the available memory,\s*(?:the estimated maximum model length is (?P<est>\d+))?)?"
)
_KV_V0 = compile_rx(
    r"The model's max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be "
    r"stored in KV cache \((?P<kv>\d+)\)"
)


def kv_insufficient_detail(text: str) -> dict | None:
    """{"needed_gib", "available_gib", "estimated_max_model_len"?, "max_model_len"} from
    "... (16.00 GiB KV cache is needed, which is larger than the available KV cache memory
    (12.34 GiB). Based on the available memory, the estimated maximum model length is N.";
    V0's "max seq len (X) is larger than ... KV cache (Y)" gives max_model_len + kv_cache_tokens."""
    if m := _KV_NEEDED.search(text):
        out: dict[str, Any] = {
            "needed_gib": float(m["needed"]),
            "available_gib": float(m["avail"]),
            "max_model_len": int(m["len"]),
        }
        if m["est"]:
            out["estimated_max_model_len"] = int(m["est"])
        return out
    if m := _KV_V0.search(text):
        return {"max_model_len": int(m["len"]), "kv_cache_tokens": int(m["kv"])}
    return None
