"""Export a trained run to a policy bundle, evaluated on seeds never used in training.

    python -m rlstack_learning.export out/train/cartpole/<run> policies/cartpole [--model best|final] [--episodes 100]

Steps: load the model folder (+ normalisation stats) -> fold normalisation into one torch
module -> ONNX -> check ONNX == SB3 deterministic action on random observations (max error
recorded in provenance) -> IO descriptor from the env's declared terms -> evaluate the ONNX
file itself with onnxruntime, with and without domain randomisation -> model card -> validate
-> rename the finished folder into place (atomic; an old bundle is replaced whole).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from typing import Any, Dict, Optional

import numpy as np
import yaml

from rlstack_bundle.bundle import load as load_bundle
from rlstack_common import atomic

from .checkpoints import load_model_dir
from .envs import ENVS, EVAL_SEED_BASE
from .onnx_export import exportable, sb3_deterministic_action, to_onnx_bytes

#: largest |ONNX - SB3| action difference accepted at export
EXPORT_TOLERANCE = 1e-4


def max_export_error(model, vecnorm, onnx_bytes: bytes, n_obs: int, n: int = 1000, seed: int = 0) -> float:
    """Largest |ONNX - SB3| over ``n`` random observations (N(0, 1) scaled by the running std when known)."""
    import onnxruntime as ort

    rng = np.random.default_rng(seed)
    if vecnorm is not None:
        obs = vecnorm.obs_rms.mean + rng.normal(size=(n, n_obs)) * 2.0 * np.sqrt(vecnorm.obs_rms.var)
    else:
        obs = rng.normal(size=(n, n_obs))
    obs = obs.astype(np.float32)
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"obs": obs})[0]
    ref = sb3_deterministic_action(model, obs, vecnorm)
    return float(np.max(np.abs(np.asarray(got, np.float64) - np.asarray(ref, np.float64))))


def evaluate_onnx(env_id: str, onnx_path: str, episodes: int, randomize: bool, progress: bool = True,
                  backend: str = "pybullet", ray_shards: int = 0,
                  env_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The ONNX file itself on ``episodes`` evaluation seeds; with ``ray_shards`` the episodes are
    spread over Ray tasks (``ray.init`` done by the caller) and merged into the same result.
    ``env_kwargs``: the env options the policy was trained with (the config's ``env_kwargs``)."""
    import time

    from .evaluate import evaluate_onnx_on_ray, onnx_episodes, summarize_episodes

    with open(onnx_path, "rb") as f:
        onnx_bytes = f.read()
    seeds = [EVAL_SEED_BASE + i for i in range(episodes)]
    if ray_shards:
        return evaluate_onnx_on_ray(env_id, onnx_bytes, seeds, randomize, ray_shards, backend, env_kwargs)
    t0 = time.perf_counter()
    out = onnx_episodes(env_id, onnx_bytes, seeds, randomize, backend, progress=progress, env_kwargs=env_kwargs)
    res = summarize_episodes(out["records"], time.perf_counter() - t0)
    res["domain_randomization"] = out["domain_randomization"]
    return res


def _derive_text(derive: Any) -> str:
    """One short line for a model card: legacy text up to ' over', or ``op(k=v, ...)``."""
    if isinstance(derive, dict):
        params = ", ".join(f"{k}={'/'.join(map(str, v)) if isinstance(v, list) else v}"
                           for k, v in derive.items() if k != "op")
        return f"`{derive['op']}({params})`"
    return str(derive).split(" over")[0]


def episode_groups(env_cls: Any, res: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    """Successes per episode group (e.g. the support: table or floor) of an evaluation, for an env
    class that names one per seed (``episode_group(seed)``); {} otherwise."""
    group_of = getattr(env_cls, "episode_group", None)
    if group_of is None or res["episodes"] - res["successes"] != len(res["failed_seeds"]):
        return {}   # no groups, or more failures than the result lists (it keeps 20)
    seeds = range(res["seeds"]["first"], res["seeds"]["last"] + 1)
    failed = set(res["failed_seeds"])
    out: Dict[str, Dict[str, int]] = {}
    for seed in seeds:
        g = out.setdefault(group_of(seed), {"episodes": 0, "successes": 0})
        g["episodes"] += 1
        g["successes"] += seed not in failed
    return out


def _group_rows(ev: Dict[str, Any]) -> str:
    groups = ev.get("groups") or {}
    if not groups:
        return ""
    lines = ["| condition | " + " | ".join(sorted(groups["nominal"])) + " |",
             "|---|" + "---|" * len(groups["nominal"])]
    for cond, label in (("nominal", "nominal"), ("randomized", "domain randomisation")):
        cells = [f"{g['successes']}/{g['episodes']}" for _, g in sorted(groups[cond].items())]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "By episode group (the same episodes):\n\n" + "\n".join(lines) + "\n"


def model_card(io: Dict[str, Any], prov: Dict[str, Any], ev: Dict[str, Any]) -> str:
    nom, dr = ev["nominal"], ev["randomized"]
    obs = "\n".join(f"| {t['index']} | `{t['name']}` | {t['unit']} | `{t['source']['topic']}` {t['source']['field']}"
                    f"{' [' + t['source']['key'] + ']' if t['source'].get('key') else ''}"
                    f"{' (' + _derive_text(t['source']['derive']) + ')' if t['source'].get('derive') else ''} |"
                    for t in io["observation"])
    act = "\n".join(f"| {t['index']} | `{t['name']}` | {t['unit']} | `{t['target']['topic']}` {t['target']['field']} "
                    f"| {t['limits'][0]:g} .. {t['limits'][1]:g} |" for t in io["action"])
    hp = yaml.safe_dump(prov["hyperparameters"], sort_keys=True, default_flow_style=True, width=1000).strip()
    return f"""# Model card: {prov['bundle']}

**Task** `{io['task']}` (`{io['env_id']}`), {io['control_rate_hz']:g} Hz. {prov['task_description']}

## Intended use
A policy node loads `policy.onnx` with onnxruntime, feeds the observation terms below (raw SI
values times `scale`; normalisation is inside the graph) and publishes the action terms
(`command = clip(offset + scale * action, limits)`). Trained and evaluated in PyBullet
(`sim_bridges`) only: not validated on hardware.

| obs | name | unit | source |
|---|---|---|---|
{obs}

| act | name | unit | target | limits |
|---|---|---|---|---|
{act}

## Results ({ev['episodes']} episodes per row, seeds {ev['seeds']['first']}..{ev['seeds']['last']}, \
never used in training)

| condition | success | 95 % lower bound | mean return | mean length |
|---|---|---|---|---|
| nominal | **{nom['success_rate'] * 100:.1f} %** ({nom['successes']}/{nom['episodes']}) \
| {nom['success_rate_wilson95_lower'] * 100:.1f} % | {nom['mean_return']:.1f} | {nom['mean_length']:.1f} |
| domain randomisation | **{dr['success_rate'] * 100:.1f} %** ({dr['successes']}/{dr['episodes']}) \
| {dr['success_rate_wilson95_lower'] * 100:.1f} % | {dr['mean_return']:.1f} | {dr['mean_length']:.1f} |

{_group_rows(ev)}
Success: {ev['success_definition']}
Domain randomisation at evaluation: `{dr['domain_randomization']}`.

## Training
{prov.get('method', '')}{prov['algorithm'].upper()}\
{' (' + prov['training_backend'] + ')' if prov.get('training_backend') else ''}, {prov['timesteps']} steps, \
{prov['num_envs']} env{'s' if prov['num_envs'] != 1 else ''}, seed {prov['seed']},
observation normalisation {'on (folded into ONNX)' if prov['normalize_obs'] else 'off'},
domain randomisation in training: `{prov['train_randomization']}`.
**Wall time from scratch: {prov['wall_time_s']:.0f} s** on {prov['machine']['cores']} cores ({prov['machine']['cpu']}),
{'stopped early when validation succeeded' if prov.get('stopped_early') else 'full step budget'}.
Commit `{prov['commit']}`. Hyperparameters: `{hp}`.
ONNX vs {prov.get('export_reference', 'SB3')} deterministic action: max |error| {prov['export_max_abs_error']:.2e} \
on 1000 random observations.

## Limitations
- {prov.get('limitations') or "Simulation only; the ball-on-plate observation uses the simulator's ground-truth "
   "ball pose (a real rig needs a perception topic with the same fields and comparable noise/latency)."}
- Outside the trained start distribution (larger offsets, speeds or delays) behaviour is untested.
- Failed evaluation seeds (nominal): {nom['failed_seeds'] or 'none'}; \
with randomisation: {dr['failed_seeds'] or 'none'}.
"""


def _first_sentence(doc: Optional[str]) -> str:
    text = " ".join((doc or "").split("\n\n")[0].split())
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def export_run(run_dir: str, dest: str, which: str = "best", episodes: int = 100, progress: bool = True,
               bundle_name: Optional[str] = None) -> Dict[str, Any]:
    with open(os.path.join(run_dir, "config.yaml")) as f:
        cfg = yaml.safe_load(f)
    summary = {}
    if os.path.isfile(os.path.join(run_dir, "summary.yaml")):
        with open(os.path.join(run_dir, "summary.yaml")) as f:
            summary = yaml.safe_load(f) or {}
    env_cls = ENVS[cfg["env_id"]]
    model, vecnorm, manifest = load_model_dir(os.path.join(run_dir, which), cfg["env_id"], cfg["algo"])
    obs_rms = vecnorm.obs_rms if vecnorm is not None and vecnorm.norm_obs else None
    module = exportable(model, obs_rms, clip_obs=getattr(vecnorm, "clip_obs", 10.0),
                        epsilon=getattr(vecnorm, "epsilon", 1e-8))
    n_obs = len(env_cls.obs_terms)
    onnx_bytes = to_onnx_bytes(module, n_obs)
    err = max_export_error(model, vecnorm if obs_rms is not None else None, onnx_bytes, n_obs)
    # float32 rounding through the network with the normalisation folded in: up to ~2e-5 seen (the
    # robot-mode lift, 256x256); 1e-4 of an action in [-1, 1] is far below anything a controller
    # or a test can tell apart (1.5 um of a lift step). A real export bug is orders larger.
    if err > EXPORT_TOLERANCE:
        raise RuntimeError(f"ONNX export differs from the SB3 policy by {err:.3g} (> {EXPORT_TOLERANCE:g})")
    return write_bundle(cfg, summary, manifest, int(model.num_timesteps), onnx_bytes, err, dest, episodes,
                        progress, bundle_name, which=which, run_dir=run_dir)


def write_bundle(cfg: Dict[str, Any], summary: Dict[str, Any], manifest: Dict[str, Any], timesteps: int,
                 onnx_bytes: bytes, err: float, dest: str, episodes: int = 100, progress: bool = True,
                 bundle_name: Optional[str] = None, which: str = "best", run_dir: str = "",
                 extra_provenance: Optional[Dict[str, Any]] = None, ray_shards: int = 0) -> Dict[str, Any]:
    """The bundle folder from an exported ONNX graph (any training backend): io.yaml, provenance,
    evaluation of the ONNX file (optionally sharded over Ray), model card, validation, atomic
    install. ``extra_provenance`` (e.g. the Ray backend's versions and cluster) is merged in."""
    from .provenance import git_commit, machine_info

    env_cls = ENVS[cfg["env_id"]]
    io = env_cls.io_descriptor()
    name = bundle_name or os.path.basename(os.path.normpath(dest))
    prov = {
        "bundle": name, "task": cfg["task"], "env_id": cfg["env_id"],
        "task_description": _first_sentence(sys.modules[env_cls.__module__].__doc__),
        "algorithm": cfg["algo"], "seed": cfg["seed"], "timesteps": int(timesteps),
        "num_envs": cfg["num_envs"], "normalize_obs": cfg["normalize_obs"],
        "train_randomization": cfg["randomize"], "model": which,
        "stopped_early": bool(summary.get("stopped_early", False)),
        "wall_time_s": float(summary.get("wall_time_s", manifest.get("wall_time_s", 0.0))),
        "resumed": bool(summary.get("resumed_from")),
        "commit": git_commit(), "hyperparameters": cfg["hyperparams"].get(cfg["algo"], {}),
        "config": cfg, "machine": machine_info(),
        "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "export_max_abs_error": err, "run_dir": os.path.relpath(run_dir),
    }
    if cfg["algo"] == "bc":
        prov["num_envs"] = 1  # episodes are played one after another
        prov["method"] = (
            "Behaviour cloning from the scripted expert (`rlstack_learning.bc`): demonstrations with DART "
            "action noise, regression of an SB3 SAC actor (deterministic tanh mean) onto the expert actions, "
            "then DAgger rounds (the learner drives, the expert labels); 'steps' counts every env step "
            f"collected (demonstrations + DAgger), {summary.get('samples', '?')} labelled samples. ")
    prov.update(extra_provenance or {})
    lim = getattr(env_cls, "card_limitations", None)
    if lim:
        prov["limitations"] = lim
    with atomic.staged_dir(dest) as tmp:
        onnx_path = os.path.join(tmp, "policy.onnx")
        with open(onnx_path, "wb") as f:
            f.write(onnx_bytes)
        prov["policy_onnx_sha256"] = atomic.sha256_file(onnx_path)
        atomic.write_yaml(os.path.join(tmp, "io.yaml"), io)
        atomic.write_yaml(os.path.join(tmp, "provenance.yaml"), prov)
        # the env the policy was trained on (its env_kwargs: another target mix, say), not the default one
        env_kwargs = cfg.get("env_kwargs") or {}
        nominal = evaluate_onnx(cfg["env_id"], onnx_path, episodes, randomize=False, progress=progress,
                                ray_shards=ray_shards, env_kwargs=env_kwargs)
        randomized = evaluate_onnx(cfg["env_id"], onnx_path, episodes, randomize=True, progress=progress,
                                   ray_shards=ray_shards, env_kwargs=env_kwargs)
        ev = {
            "episodes": episodes, "seeds": nominal["seeds"],
            "success_definition": getattr(env_cls, "success_definition", None) or (
                f"the episode reaches its time limit ({env_cls.max_episode_steps} steps = "
                f"{env_cls.max_episode_steps / env_cls.control_rate_hz:g} s) without failing"),
            "success_rate": nominal["success_rate"],
            "nominal": nominal, "randomized": randomized, "evaluated_file": "policy.onnx (onnxruntime)",
        }
        groups = {"nominal": episode_groups(env_cls, nominal), "randomized": episode_groups(env_cls, randomized)}
        if groups["nominal"]:
            ev["groups"] = groups
        atomic.write_yaml(os.path.join(tmp, "evaluation.yaml"), ev)
        atomic.write_text(os.path.join(tmp, "MODEL_CARD.md"), model_card(io, prov, ev))
        load_bundle(tmp)  # never install a bundle the validator rejects
    print(f"[export] {dest}: nominal success {nominal['success_rate'] * 100:.1f} %, with DR "
          f"{randomized['success_rate'] * 100:.1f} % over {episodes} episodes; ONNX error {err:.1e}", flush=True)
    return ev


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rlstack_learning.export", description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir")
    p.add_argument("dest", help="bundle folder, e.g. policies/cartpole")
    p.add_argument("--model", default="best", choices=["best", "final"])
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    export_run(a.run_dir, a.dest, a.model, a.episodes, progress=not a.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
