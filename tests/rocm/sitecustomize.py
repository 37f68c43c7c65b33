"""Make this Python a Linux machine with an AMD GPU and PyTorch for ROCm: loaded at start-up by every
interpreter that has this folder on PYTHONPATH (the sweep and each framework worker it starts).

- `import torch` gives the stand-in for a ROCm build of PyTorch (tests/fake_gpu_torch.py) seeing one
  AMD Instinct MI300X (gfx942) at PCI 0000:c1:00.0, as cuda:0;
- the stand-in's package folder holds lib/libamdhip64.so, as PyTorch for ROCm bundles HIP's runtime there,
  and ctypes.CDLL loads it as the stand-in for HIP's runtime (tests/fake_hip.py);
- `import amdsmi` gives the stand-in for AMD's SMI package (tests/fake_amdsmi.py) describing the same GPU:
  PCIe Gen5 x16 at most (32000 MT/s), Gen4 x16 as read idle, NUMA node 0.
Everything else is this machine's own.

- SIMULATED_ROCM_ROOT: a folder to hold the stand-in torch package's lib/ (required)
- SIMULATED_ROCM_TORCH: the PyTorch version (2.7.1+rocm6.3)
- SIMULATED_ROCM_AMDSMI: "absent" (amdsmi not installed) or "no-metrics" (amdsmi_get_pcie_info fails)
"""

import ctypes
import importlib.util
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
GPU = {"name": "AMD Instinct MI300X", "gcnArchName": "gfx942:sramecc+:xnack-", "total_memory": 192 * 2**30, "major": 9, "minor": 4,
       "multi_processor_count": 304, "is_integrated": False, "uuid": "5f2a1c3e-0000-0000-0000-000000000001", "pci_domain_id": 0,
       "pci_bus_id": 0xC1, "pci_device_id": 0}  # fmt: skip


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_simulated_{name}", TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


root = Path(os.environ["SIMULATED_ROCM_ROOT"]) / "torch"
(root / "lib").mkdir(parents=True, exist_ok=True)
(root / "lib" / "libamdhip64.so").touch()

torch_module = _load("fake_gpu_torch")
sys.modules["torch"] = torch_module.GpuTorch("rocm", os.environ.get("SIMULATED_ROCM_TORCH", "2.7.1+rocm6.3"), [dict(GPU)], [str(root)])

hip = _load("fake_hip").FakeHip([(GPU["name"], "0000:c1:00.0", 8 * 2**30)])
_RealCDLL = ctypes.CDLL


class _CDLL(_RealCDLL):
    """ctypes.CDLL, except that the bundled libamdhip64.so loads as the stand-in."""

    def __new__(cls, name, *args, **kwargs):
        if name and os.path.basename(str(name)) == "libamdhip64.so" and Path(name).resolve().parent == (root / "lib").resolve():
            return hip
        return super().__new__(cls)


ctypes.CDLL = _CDLL

if os.environ.get("SIMULATED_ROCM_AMDSMI") != "absent":
    amdsmi = _load("fake_amdsmi")
    amdsmi.__spec__ = importlib.machinery.ModuleSpec("amdsmi", None)
    amdsmi.describe([{"bdf": "0000:c1:00.0", "market_name": "AMD Instinct MI300X", "gfx": "gfx942", "numa": 0, "max_speed": 32000,
                      "max_width": 16, "speed": 16000, "width": 16,
                      "metrics": os.environ.get("SIMULATED_ROCM_AMDSMI") != "no-metrics"}])  # fmt: skip
    sys.modules["amdsmi"] = amdsmi
