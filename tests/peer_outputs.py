"""Peers' output as the tools print it, to import in tests.

nvbandwidth v0.8 with -j (json_output.cpp): one object under "nvbandwidth", printed by JsonCpp's
styled writer (three-space indent, `"key" : value`); matrix cells are strings ("N/A" where nothing
was measured); a testcase is appended as "Running" and completed in place with its matrix and
"Passed", left at "Running" with an "Error" entry after it when it throws, or added as "Waived"; a
fatal CUDA or NVML error sets "error" at the top and the process exits 1.

bandwidthTest --csv (CUDA samples v12.8): a banner, the device lines, the mode, one CSV line per
size, "Result = PASS" or "Result = FAIL", and a closing note.
"""

from __future__ import annotations

import json
from typing import Any

H100 = "NVIDIA H100 80GB HBM3"
DESCRIPTIONS = {"host_to_device": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                "device_to_host": "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)"}  # fmt: skip


def passed(name: str, *cells: str) -> list[dict[str, Any]]:
    """A testcase that ran: a matrix of one row, a cell per GPU."""
    total = sum(float(c) for c in cells if c != "N/A")
    return [{"bandwidth_description": DESCRIPTIONS.get(name.split("_memcpy")[0].replace("_bidirectional", ""), ""),
             "bandwidth_matrix": [list(cells)], "name": name, "status": "Passed", "sum": total}]  # fmt: skip


def waived(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "status": "Waived"}]


def errored(name: str) -> list[dict[str, Any]]:
    """A testcase that threw: left at Running, and an Error entry appended after it."""
    return [{"name": name, "status": "Running"}, {"name": name, "status": "Error"}]


def nvbandwidth(*testcases: list[dict[str, Any]], gpus: tuple[tuple[str, str], ...] = ((H100, "00000000:1b:00"),),
                host: str = "node07", version: str = "v0.8", mib: int = 512, error: str | None = None,
                before: str = "", after: str = "") -> str:  # fmt: skip
    """nvbandwidth -j's stdout, with any text the run printed around it."""
    root: dict[str, Any] = {"CUDA Runtime Version": 12080, "Driver Version": "570.124.06",
                            "GPU Device list": [f"{i}: {name} ({bus}): ({host})" for i, (name, bus) in enumerate(gpus)],
                            "git_version": "", "version": version}  # fmt: skip
    if mib < 512:
        root["warning"] = ("NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested"
                           " to use the default buffer size (64MB) to achieve maximal peak bandwidth.")  # fmt: skip
    if error:
        root["error"] = error
    cases = [entry for case in testcases for entry in case]
    if cases:
        root["testcases"] = cases
    text = json.dumps({"nvbandwidth": root}, indent=3, separators=(",", " : "))
    return before + text + "\n" + after


def kit_runs(*runs: tuple[int, str | None, int]) -> str:
    """Several nvbandwidth runs kept together, each with its size, command and exit code: (MiB, the
    run's stdout or None where it printed no JSON, exit code)."""
    listed = []
    for mib, stdout, code in runs:
        command = f"/tmp/peers-build/nvbandwidth/nvbandwidth -j -b {mib} -t host_to_device_memcpy_ce device_to_host_memcpy_ce"
        run: dict[str, Any] = {"buffer_size_mib": mib, "buffer_size_bytes": mib * 2**20, "command": command,
                               "exit_code": code, "seconds": 4.2}  # fmt: skip
        if stdout is None:
            run.update(output=None, stdout_stderr_raw="Segmentation fault (core dumped)\n")
        else:
            run["output"] = json.loads(stdout[stdout.index("{"):])
        listed.append(run)
    return json.dumps({"tool": "nvbandwidth v0.8", "binary": "/tmp/peers-build/nvbandwidth/nvbandwidth", "runs": listed}, indent=1)


def csv_line(config: str, gbps: float, size: int, devices: int = 1) -> str:
    seconds = size / (gbps * 1e9) if gbps else 0.0
    return f"bandwidthTest-{config}, Bandwidth = {gbps:.1f} GB/s, Time = {seconds:.5f} s, Size = {size} bytes, NumDevsUsed = {devices}"


def bandwidthtest(*lines: str, devices: tuple[str, ...] = (H100,), first: int = 0, mode: str = "Range", result: str = "PASS") -> str:
    """bandwidthTest --csv's stdout."""
    named = "\n".join(f" Device {first + i}: {name}" for i, name in enumerate(devices))
    return ("[CUDA Bandwidth Test] - Starting...\nRunning on...\n\n" + named + f"\n {mode} Mode\n\n" + "\n".join(lines)
            + f"\nResult = {result}\n\nNOTE: The CUDA Samples are not meant for performance measurements. Results may vary"
            " when GPU Boost is enabled.\n")  # fmt: skip


def kit_sections(*runs: tuple[str, str, str]) -> str:
    """Several bandwidthTest runs kept together, each under its name, command and exit code: (name,
    the arguments, the run's stdout) with exit codes following Result."""
    parts = []
    for name, arguments, stdout in runs:
        code = 1 if "Result = FAIL" in stdout else 0
        parts.append(f"### {name}\n### $ /tmp/peers-build/bandwidthTest/bandwidthTest {arguments}\n### exit {code}\n{stdout}")
    return "\n".join(parts)
