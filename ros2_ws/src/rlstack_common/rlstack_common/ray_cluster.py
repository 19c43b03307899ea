"""Connecting to Ray (docs/guides/scale-out-on-ray.md): a private local instance by default, a running cluster
with ``address``. Used by the Ray training backend (:mod:`rlstack_learning.rllib_train`), the
sharded bundle evaluation (:mod:`rlstack_learning.evaluate`) and the sharded fetch evaluation
(``rlstack_mission.evaluate --ray-workers``).

Ray is a workstation-side, optional dependency (requirements/scale.txt, installed by the full
profile): nothing imports this module unless a ``--backend ray`` / ``--ray-*`` option is given.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, TypeVar

T = TypeVar("T")


class RayUnavailable(RuntimeError):
    pass


def require_ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed in this environment (run 'make setup': requirements/scale.txt "
                             "installs it in the full profile)") from None
    return ray


def init_ray(address: Optional[str] = None, num_cpus: Optional[int] = None) -> Dict[str, Any]:
    """Start a private local Ray instance (``address`` None) or join a running cluster
    (``address`` "auto" or "<head-ip>:6379"); returns :func:`cluster_info`.

    No dashboard and no usage-stats reporting. The worker processes inherit this process's
    environment (PYTHONPATH of the sourced workspace), so they import rlstack the same way;
    on a multi-machine cluster every node runs the same checkout (docs/guides/scale-out-on-ray.md).
    """
    ray = require_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")   # no usage report to the outside
    if ray.is_initialized():
        return cluster_info()
    kwargs: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "configure_logging": True, "logging_level": "warning"}
    if address:
        if num_cpus is not None:
            raise RayUnavailable("--num-cpus applies to a local Ray instance only, not with --address")
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailable(f"cannot connect to the Ray cluster at {address!r}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    else:
        ray.init(num_cpus=num_cpus, **kwargs)
    return cluster_info()


def cluster_info() -> Dict[str, Any]:
    """Ray version, nodes alive and CPUs: recorded in bundle provenance and run summaries."""
    ray = require_ray()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {"ray": ray.__version__, "nodes": len(nodes),
            "cpus": int(ray.cluster_resources().get("CPU", 0)),
            "address": "local" if len(nodes) <= 1 else ray.get_runtime_context().gcs_address}


def shutdown() -> None:
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()


def shards(items: Sequence[T], n: int) -> List[List[T]]:
    """``items`` cut into ``min(n, len(items))`` contiguous, near-equal shards (order kept)."""
    if n < 1:
        raise ValueError(f"number of shards must be >= 1, got {n}")
    n = min(n, len(items)) or 1
    base, extra = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        out.append(list(items[i:i + size]))
        i += size
    return out
