"""Make this Python look like a Grace node's to xferbench: loaded at start-up by every interpreter that has
this folder on PYTHONPATH (the sweep and each framework worker it starts).

What changes, as on a Grace Hopper: platform answers aarch64 (machine, platform), and /proc/cpuinfo reads as
aarch64 Linux writes it for a Grace CPU's Arm Neoverse-V2 cores (no "model name" line: an implementer and a
part number). The GPU and its NVLink-C2C links come from the stand-ins for CuPy and NVML on the same path.
Native libraries still see this machine: this tests xferbench's own code paths.
"""

import builtins
import io
import os
import platform

CPUINFO = "".join(f"processor\t: {cpu}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics"
                  " fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat"
                  " ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint"
                  " svei8mm svebf16 i8mm bf16 dgh bti\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
                  "CPU part\t: 0xd4f\nCPU revision\t: 0\n\n" for cpu in range(4))

_machine, _platform, _open = platform.machine, platform.platform, builtins.open


def _aarch64_platform(*args, **kwargs):
    return _platform(*args, **kwargs).replace(_machine(), "aarch64")


def _grace_open(file, mode="r", *args, **kwargs):
    if isinstance(file, (str, bytes, os.PathLike)) and os.fsdecode(file) == "/proc/cpuinfo" and "r" in mode:
        return io.StringIO(CPUINFO) if "b" not in mode else io.BytesIO(CPUINFO.encode())
    return _open(file, mode, *args, **kwargs)


platform.machine = lambda: "aarch64"
platform.processor = lambda: ""
platform.platform = _aarch64_platform
builtins.open = _grace_open
