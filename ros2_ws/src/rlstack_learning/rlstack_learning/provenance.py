"""Provenance of a training run: the git commit and the machine (written into bundles'
``provenance.yaml`` by :mod:`rlstack_learning.export` and into run folders by
:mod:`rlstack_learning.train`; its own module so that neither imports the other)."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any, Dict, Optional


def git_commit(cwd: Optional[str] = None) -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> Dict[str, Any]:
    import stable_baselines3
    import torch

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"hostname": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "os": platform.platform(),
            "python": platform.python_version(), "torch": str(torch.__version__),
            "stable_baselines3": str(stable_baselines3.__version__), "torch_threads": torch.get_num_threads()}
