"""Make this Python a Linux machine with an Intel GPU and PyTorch for XPU: loaded at start-up by every
interpreter that has this folder on PYTHONPATH (the sweep and each framework worker it starts).

`import torch` gives the stand-in for an XPU build of PyTorch (tests/fake_gpu_torch.py) seeing one Intel
GPU as xpu:0; everything else is this machine's own.

- SIMULATED_XPU_TORCH: the PyTorch version (2.8.0+xpu); 2.5 has no torch.xpu.Event.elapsed_time
- SIMULATED_XPU_GPU: the GPU's name (Intel(R) Arc(TM) B580 Graphics)
"""

import importlib.util
import os
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("_simulated_fake_gpu_torch", Path(__file__).resolve().parent.parent / "fake_gpu_torch.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
GPU = {"name": os.environ.get("SIMULATED_XPU_GPU", "Intel(R) Arc(TM) B580 Graphics"), "platform_name": "Intel(R) oneAPI Unified Runtime over Level-Zero",
       "type": "gpu", "driver_version": "1.6.32224+14", "total_memory": 12 * 2**30, "max_compute_units": 160, "gpu_eu_count": 160,
       "gpu_subslice_count": 20}  # fmt: skip
sys.modules["torch"] = module.GpuTorch("xpu", os.environ.get("SIMULATED_XPU_TORCH", "2.8.0+xpu"), [GPU])
