"""Sim-to-sim transfer: evaluate shipped bundles (trained in PyBullet) on another backend.

The same evaluation as the model cards (``export.evaluate_onnx``: the bundle's ONNX file in
onnxruntime, seeds ``EVAL_SEED_BASE ..``, success = the task's own ``is_success``), nominal and
with the task's default domain randomisation, on the backend named here::

    python -m rlstack_learning.transfer --backend mujoco --bundles policies/cartpole policies/ball_plate

JSON on stdout (``--json PATH`` to a file too), a markdown table on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

import yaml


def evaluate_bundle(bundle_dir: str, backend: str, episodes: int) -> Dict[str, Any]:
    """Nominal and randomised results of one bundle on ``backend``, beside its shipped (PyBullet) numbers."""
    from . import envs  # noqa: F401  (registers the gym ids)
    from .export import evaluate_onnx

    with open(os.path.join(bundle_dir, "io.yaml"), encoding="utf-8") as f:
        env_id = yaml.safe_load(f)["env_id"]
    shipped: Dict[str, Any] = {}
    path = os.path.join(bundle_dir, "evaluation.yaml")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            shipped = yaml.safe_load(f) or {}
    onnx = os.path.join(bundle_dir, "policy.onnx")
    out: Dict[str, Any] = {"bundle": os.path.basename(os.path.normpath(bundle_dir)), "env_id": env_id,
                           "backend": backend}
    for key, randomize in (("nominal", False), ("randomized", True)):
        res = evaluate_onnx(env_id, onnx, episodes, randomize, progress=False, backend=backend)
        out[key] = res
        ref = shipped.get(key) or {}
        out[f"pybullet_{key}_success_rate"] = ref.get("success_rate")
    return out


def table(results: List[Dict[str, Any]]) -> str:
    rows = ["| bundle | engine | nominal success | DR success | nominal mean return | DR mean return | "
            "PyBullet nominal / DR (model card) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        n, d = r["nominal"], r["randomized"]
        ref = f"{_pct(r['pybullet_nominal_success_rate'])} / {_pct(r['pybullet_randomized_success_rate'])}"
        rows.append(f"| {r['bundle']} | {r['backend']} | {_pct(n['success_rate'])} ({n['successes']}/{n['episodes']}, "
                    f"Wilson95 >= {100 * n['success_rate_wilson95_lower']:.1f} %) | {_pct(d['success_rate'])} "
                    f"({d['successes']}/{d['episodes']}) | {n['mean_return']:.1f} | {d['mean_return']:.1f} | {ref} |")
    return "\n".join(rows)


def _pct(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="mujoco", help="backend to evaluate on (sim_bridges.backend_names())")
    ap.add_argument("--bundles", nargs="+", required=True, help="bundle directories (policies/<task>)")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--json", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    from sim_bridges import backend_names

    if args.backend not in backend_names():
        print(f"transfer: error: unknown backend '{args.backend}'; valid: {', '.join(backend_names())}",
              file=sys.stderr)
        return 2
    if args.episodes < 1:
        print("transfer: error: --episodes must be >= 1", file=sys.stderr)
        return 2
    results = []
    for b in args.bundles:
        if not os.path.exists(os.path.join(b, "io.yaml")):
            print(f"transfer: error: '{b}' is not a bundle directory (no io.yaml)", file=sys.stderr)
            return 2
        try:
            results.append(evaluate_bundle(b, args.backend, args.episodes))
        except (ValueError, RuntimeError, NotImplementedError) as exc:
            print(f"transfer: error: {os.path.basename(os.path.normpath(b))} on {args.backend}: {exc}", file=sys.stderr)
            return 2
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(table(results), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
