"""bootlog.measure.gpumem: the tools' real output formats, parsed directly and through stand-in tools
on PATH (small shell scripts in a temporary directory; PATH holds nothing else).

Where each sample comes from:
* rocm-smi, `--showmeminfo vram --json`: the `{"cardN": {"VRAM Total Memory (B)": "…",
  "VRAM Total Used Memory (B)": "…"}}` shape of ROCm/rocm_smi_lib's rocm_smi.py, as posted by a
  user in marimo-team/marimo issue #9237 (a Radeon RX 7900 XT, `--showproductname --showuse
  --showmeminfo vram --json`, verbatim below) and the 34342961152 / 7028736 bytes a public script
  quotes from `rocm-smi -d 0 --showmeminfo vram`;
* amd-smi, `metric --json`: luckylinux/supermicro-fan-control GPU_NOTES.md (commit 1cae1a4a, a
  Radeon RX 6600, amd-smi of ROCm 6.x: a bare list), its `gpu` and `mem_usage` keys, which is all
  `--mem-usage` prints; later amd-smi wraps the same list as `{"gpu_data": [...]}`
  (nathaninline/ajean issue #39, RX 7800 XT). The "MB" unit is MiB: amdsmi_cli/amdsmi_commands.py
  (ROCm/amdsmi 0ceca28) divides bytes by 1024*1024;
* nvidia-smi, `--query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits`: one
  `index, used, total` line per GPU in MiB, ", " between fields (nvidia-smi(1) CSV format; public
  callers split it with `awk -F ', '`); 81559 MiB is what an H100 80GB HBM3 reports. When the
  driver is missing it prints "NVIDIA-SMI has failed because it couldn't communicate with the
  NVIDIA driver…" and exits 9;
* the operator's figure: "driver used 30.97 GiB of 31.86 — 0.89 GiB of real free VRAM per card"
  (31.86 GiB = 32624 MiB per card, 30.97 GiB ≈ 31713 MiB used).
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from bootlog.measure import gpumem
from bootlog.errors import SourceError
from bootlog.measure.gpumem import GpuMem, lower_free, parse_amd_smi, parse_nvidia_smi, parse_rocm_smi

ROCM_RX7900XT = """{
  "card0": {
    "GPU use (%)": "0",
    "VRAM Total Memory (B)": "21458059264",
    "VRAM Total Used Memory (B)": "27856896",
    "Card Series": "Radeon RX 7900 XT",
    "Card Model": "0x744c",
    "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
    "Card SKU": "D70401XT",
    "Subsystem ID": "0x471e",
    "Device Rev": "0xcc",
    "Node ID": "1",
    "GUID": "26967",
    "GFX Version": "gfx1100"
  }
}
"""

MIB = 1 << 20
# the operator's two cards after ready: 31713 of 32624 MiB used on each
ROCM_OPERATOR = json.dumps(
    {
        "card0": {"VRAM Total Memory (B)": str(32624 * MIB), "VRAM Total Used Memory (B)": str(31713 * MIB)},
        "card1": {"VRAM Total Memory (B)": str(32624 * MIB), "VRAM Total Used Memory (B)": str(31713 * MIB)},
    },
    indent=2,
)

_AMD_MEM = {
    "total_vram": {"value": 8176, "unit": "MB"},
    "used_vram": {"value": 202, "unit": "MB"},
    "free_vram": {"value": 7974, "unit": "MB"},
    "total_visible_vram": {"value": 8176, "unit": "MB"},
    "used_visible_vram": {"value": 202, "unit": "MB"},
    "free_visible_vram": {"value": 7974, "unit": "MB"},
    "total_gtt": {"value": 64357, "unit": "MB"},
    "used_gtt": {"value": 65, "unit": "MB"},
    "free_gtt": {"value": 64292, "unit": "MB"},
}
AMD_LIST = json.dumps([{"gpu": 0, "mem_usage": _AMD_MEM}], indent=4)
AMD_GPU_DATA = json.dumps({"gpu_data": [{"gpu": 0, "mem_usage": _AMD_MEM}]}, indent=4)

NVIDIA = "0, 1, 81559\n1, 70123, 81559\n"
NVIDIA_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


# ------------------------------------------------------------------------------ parsers


def test_rocm_smi_real_output():
    [c] = parse_rocm_smi(ROCM_RX7900XT)
    assert c.index == 0
    assert c.total_gib == pytest.approx(21458059264 / 2**30, abs=1e-3)  # 19.98
    assert c.used_gib == pytest.approx(0.026, abs=1e-3)
    assert c.free_gib == pytest.approx(c.total_gib - c.used_gib, abs=2e-3)


def test_rocm_smi_brief_figures_and_warning_line_before_json():
    text = (
        "WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n"
        '{"card0": {"VRAM Total Memory (B)": "34342961152", "VRAM Total Used Memory (B)": "7028736"}}'
    )
    [c] = parse_rocm_smi(text)
    assert (c.total_gib, c.used_gib) == (31.984, 0.007)


def test_operator_figure_per_card():
    cards = parse_rocm_smi(ROCM_OPERATOR)
    assert [c.index for c in cards] == [0, 1]
    for c in cards:
        assert (round(c.used_gib, 2), round(c.total_gib, 2), round(c.free_gib, 2)) == (30.97, 31.86, 0.89)


def test_amd_smi_bare_list_and_gpu_data_envelope():
    for text in (AMD_LIST, AMD_GPU_DATA):
        [c] = parse_amd_smi(text)
        assert c.index == 0
        assert c.total_gib == pytest.approx(8176 / 1024, abs=1e-3)
        assert c.used_gib == pytest.approx(202 / 1024, abs=1e-3)
        assert c.free_gib == pytest.approx(7974 / 1024, abs=1e-3)


def test_nvidia_smi_lines():
    cards = parse_nvidia_smi(NVIDIA)
    assert [(c.index, c.used_gib, c.total_gib) for c in cards] == [(0, 0.001, 79.647), (1, 68.479, 79.647)]
    assert cards[1].free_gib == pytest.approx(79.647 - 68.479, abs=2e-3)


@pytest.mark.parametrize(
    "parser,text",
    [
        (parse_rocm_smi, "not json at all"),
        (parse_rocm_smi, '{"card0": {"VRAM Total Memory (B)": "N/A", "VRAM Total Used Memory (B)": "1"}}'),
        (parse_rocm_smi, '{"system": {"Driver version": "6.8"}}'),
        (parse_rocm_smi, '["card0"]'),
        (parse_amd_smi, '[{"gpu": 0, "mem_usage": {"total_vram": "N/A", "used_vram": "N/A", "free_vram": "N/A"}}]'),
        (parse_amd_smi, '{"gpu_data": "nope"}'),
        (parse_amd_smi, '[{"gpu": "0\\u001b[2J", "mem_usage": {}}]'),
        (parse_nvidia_smi, "0, [N/A], [N/A]\n"),
        (parse_nvidia_smi, NVIDIA_NO_DRIVER),
        (parse_nvidia_smi, ""),
        (parse_nvidia_smi, "0, 900, 100\n"),  # used above total
    ],
)
def test_garbage_is_one_line_source_error(parser, text):
    with pytest.raises(SourceError) as err:
        parser(text)
    msg = str(err.value)
    assert "\n" not in msg and "\x1b" not in msg and len(msg) < 300


# ------------------------------------------------------------------------------ tools on PATH


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """Make stand-in tools: tools(name, stdout=..., code=0, stderr=..., script=None)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))

    def make(name, stdout="", code=0, stderr="", script=None):
        (tmp_path / f"{name}.out").write_text(stdout)
        (tmp_path / f"{name}.err").write_text(stderr)
        body = script or (f'/bin/cat "{tmp_path}/{name}.out"\n/bin/cat "{tmp_path}/{name}.err" >&2\nexit {code}\n')
        path = bindir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return path

    return make


def test_auto_prefers_rocm_smi_then_amd_smi_then_nvidia_smi(tools):
    tools("nvidia-smi", NVIDIA)
    assert gpumem.pick("auto") == "nvidia-smi"
    assert [c.index for c in gpumem.read("auto")] == [0, 1]
    tools("amd-smi", AMD_LIST)
    assert gpumem.pick("auto") == "amd-smi"
    tools("rocm-smi", ROCM_OPERATOR)
    assert gpumem.pick("auto") == "rocm-smi"
    assert [round(c.free_gib, 2) for c in gpumem.read("auto")] == [0.89, 0.89]
    assert gpumem.read("nvidia-smi")[1].used_gib == 68.479  # asked by name: that one


def test_the_tool_is_run_with_the_documented_arguments(tools, tmp_path):
    log = tmp_path / "argv"
    tools("rocm-smi", script=f'printf "%s\\n" "$@" > "{log}"\n/bin/cat "{tmp_path}/data"\n')
    (tmp_path / "data").write_text(ROCM_RX7900XT)
    gpumem.read("auto")
    assert log.read_text().split() == ["--showmeminfo", "vram", "--json"]


def test_no_tool_is_none_not_an_error(tools):
    assert gpumem.read("auto") is None
    assert gpumem.read("none") is None


def test_named_tool_missing_is_an_error(tools):
    with pytest.raises(SourceError, match="nvidia-smi not found on PATH"):
        gpumem.read("nvidia-smi")
    with pytest.raises(SourceError, match="unknown GPU tool"):
        gpumem.read("intel-smi")


def test_failing_tool_is_one_line_with_its_message(tools):
    tools("nvidia-smi", stdout=NVIDIA_NO_DRIVER, code=9)
    with pytest.raises(SourceError) as err:
        gpumem.read("auto")
    assert str(err.value).startswith("nvidia-smi failed (exit 9): NVIDIA-SMI has failed")
    assert "\n" not in str(err.value)


def test_tool_exit_1_with_stderr(tools):
    tools(
        "rocm-smi", code=1, stderr="Traceback (most recent call last):\n  ...\nRuntimeError: \x1b[1mrsmi init failed\n"
    )
    with pytest.raises(SourceError) as err:
        gpumem.read("auto")
    assert str(err.value) == "rocm-smi failed (exit 1): RuntimeError: \\x1b[1mrsmi init failed"


def test_tool_printing_garbage(tools):
    tools(
        "amd-smi",
        stdout="ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n",
    )
    with pytest.raises(SourceError, match="amd-smi printed no JSON"):
        gpumem.read("auto")


def test_hanging_tool_is_stopped_in_time(tools):
    tools("rocm-smi", script="/bin/sleep 30\n")
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="did not answer within 0.5 s"):
        gpumem.read("auto", timeout=0.5)
    assert time.monotonic() - t0 < 2


def test_flooding_tool_is_stopped(tools):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    tools("nvidia-smi", script="exec /bin/cat /dev/zero\n")
    with pytest.raises(SourceError, match="more than 4 MiB"):
        gpumem.read("auto", timeout=5)


# ------------------------------------------------------------------------------ lower_free


def test_lower_free_keeps_the_reading_held_through_generation():
    after_ready = [GpuMem(0, 30.97, 31.86, 0.89), GpuMem(1, 30.5, 31.86, 1.36)]
    after_gen = [GpuMem(0, 30.5, 31.86, 1.36), GpuMem(1, 31.0, 31.86, 0.86), GpuMem(2, 1.0, 31.86, 30.86)]
    got = lower_free(after_ready, after_gen)
    assert got == [GpuMem(0, 30.97, 31.86, 0.89), GpuMem(1, 31.0, 31.86, 0.86), GpuMem(2, 1.0, 31.86, 30.86)]
    assert lower_free(None, after_gen) == after_gen
    assert lower_free(after_ready, None) == after_ready
    assert lower_free(None, None) is None


def test_figures_are_metric_rows_per_rank():
    rows = gpumem.figures([GpuMem(1, 30.97, 31.86, 0.89)])
    assert rows == [
        {"name": "gpu_used_gib", "value": 30.97, "unit": "GiB", "rank": 1},
        {"name": "gpu_free_gib", "value": 0.89, "unit": "GiB", "rank": 1},
    ]
