"""Policy bundles: load, validate, run. Needs numpy, PyYAML and onnxruntime only (no torch, no
SB3, no ``onnx``, no pickle): training writes bundles (``rlstack_learning.export``), the policy
node serves them, and both use this module.

    python -m rlstack_bundle validate policies/cartpole [policies/ball_plate ...]
    python -m rlstack_bundle info policies/cartpole

A bundle is a folder::

    policy.onnx       obs (batch, n_obs) float32 [+ one uint8 image input per image term] -> action;
                      normalisation folded in
    io.yaml           observation/action terms (see rlstack_bundle.terms)
    provenance.yaml   task, algorithm, seed, steps, commit, hyperparameters, wall time, machine,
                      policy_onnx_sha256
    evaluation.yaml   measured results (episodes, seeds, success rate with and without DR)
    MODEL_CARD.md     what it does, how well, where it fails
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
import yaml

from . import derive as derive_ops
from .terms import IO_FORMAT, safe_action_problem

REQUIRED_FILES = ("policy.onnx", "io.yaml", "provenance.yaml", "evaluation.yaml", "MODEL_CARD.md")
PROVENANCE_KEYS = ("task", "env_id", "algorithm", "seed", "timesteps", "commit", "hyperparameters",
                   "wall_time_s", "machine", "policy_onnx_sha256")
EVALUATION_KEYS = ("episodes", "seeds", "success_rate")


class BundleError(Exception):
    """A bundle is missing, incomplete or inconsistent; ``problems`` lists every finding."""

    def __init__(self, path: str, problems: List[str]) -> None:
        self.path = path
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid policy bundle '{path}':\n{lines}")


@dataclass
class Bundle:
    path: str
    io: Dict[str, Any]
    provenance: Dict[str, Any]
    evaluation: Dict[str, Any]
    session: Any = field(repr=False)

    @property
    def discrete(self) -> bool:
        return self.io["model"]["output"]["kind"] == "discrete"

    @property
    def obs_dim(self) -> int:
        return len(self.io["observation"])

    @property
    def image_specs(self) -> List[Any]:
        """The :class:`rlstack_bundle.images.ImageSpec` of every image term ([] for a state policy)."""
        from .images import ImageSpec

        return [ImageSpec.from_dict(d) for d in self.io.get("image_observation") or []]

    def act(self, obs: np.ndarray, images: Optional[Dict[str, np.ndarray]] = None) -> np.ndarray:
        """Network output for one observation (n_obs,) or a batch (B, n_obs); ``images``: ONNX input
        name -> stacked uint8 frames (C, h, w) or (B, C, h, w) for a pixel policy."""
        x = np.asarray(obs, dtype=np.float32)
        single = x.ndim == 1
        feed = {"obs": x.reshape(1, -1) if single else x}
        for name, img in (images or {}).items():
            img = np.asarray(img, dtype=np.uint8)
            feed[name] = img[None] if single else img
        out = self.session.run(None, feed)[0]
        return out[0] if single else out

    def command(self, action: np.ndarray) -> np.ndarray:
        """Network output -> physical commands (term units), per ``io.yaml``."""
        terms = self.io["action"]
        if self.discrete:
            return np.array([terms[0]["choices"][int(np.asarray(action).reshape(-1)[0])]])
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(-1), -1.0, 1.0)
        cmd = np.array([t["offset"] + t["scale"] * a[t["index"]] for t in terms])
        lo = np.array([t["limits"][0] for t in terms])
        hi = np.array([t["limits"][1] for t in terms])
        return np.clip(cmd, lo, hi)


def _read_yaml(path: str, problems: List[str]) -> Optional[Dict[str, Any]]:
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{name}: cannot read: {exc}")
        return None
    except yaml.YAMLError as exc:
        problems.append(f"{name}: not valid YAML: {str(exc).splitlines()[0]}")
        return None
    if not isinstance(data, dict):
        problems.append(f"{name}: expected a mapping at the top level, got {type(data).__name__}")
        return None
    return data


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_io(io: Dict[str, Any], problems: List[str]) -> None:
    if io.get("format") != IO_FORMAT:
        problems.append(f"io.yaml: format must be '{IO_FORMAT}', got {io.get('format')!r}")
    rate = io.get("control_rate_hz")
    if not (_finite(rate) and rate > 0):
        problems.append(f"io.yaml: control_rate_hz must be a positive number, got {rate!r}")
    model = io.get("model")
    if not (isinstance(model, dict) and isinstance(model.get("input"), dict)
            and isinstance(model.get("output"), dict)):
        problems.append("io.yaml: 'model' with 'input' and 'output' mappings is required")
        return
    kind = model["output"].get("kind")
    if kind not in ("continuous", "discrete"):
        problems.append(f"io.yaml: model.output.kind must be 'continuous' or 'discrete', got {kind!r}")
    for section, need in (("observation", ("name", "unit", "scale", "source")),
                          ("action", ("name", "unit", "limits", "target"))):
        terms = io.get(section)
        if not isinstance(terms, list) or not terms:
            problems.append(f"io.yaml: '{section}' must be a non-empty list of terms")
            continue
        names = []
        for i, t in enumerate(terms):
            where = f"io.yaml: {section}[{i}]"
            if not isinstance(t, dict):
                problems.append(f"{where}: must be a mapping")
                continue
            missing = [k for k in need if k not in t]
            if missing:
                problems.append(f"{where} ('{t.get('name', '?')}'): missing {missing}")
                continue
            names.append(t["name"])
            if t.get("index") != i:
                problems.append(f"{where} ('{t['name']}'): index must be {i}, got {t.get('index')!r}")
            src = t.get("source" if section == "observation" else "target")
            if not (isinstance(src, dict)
                    and all(isinstance(src.get(k), str) and src.get(k) for k in ("topic", "type", "field"))):
                problems.append(f"{where} ('{t['name']}'): source/target needs topic, type and field strings")
            elif not src["topic"].startswith("/"):
                problems.append(f"{where} ('{t['name']}'): topic must be absolute, got {src['topic']!r}")
            if section == "observation":
                if not (_finite(t["scale"]) and t["scale"] != 0):
                    problems.append(f"{where} ('{t['name']}'): scale must be a non-zero number, got {t['scale']!r}")
                if isinstance(src, dict):
                    obs_names = [o.get("name") for o in terms if isinstance(o, dict)]
                    problems.extend(f"{where}: {p}" for p in derive_ops.check(src.get("derive"), obs_names, t["name"]))
                continue
            lim = t["limits"]
            if not (isinstance(lim, list) and len(lim) == 2 and all(_finite(v) for v in lim) and lim[0] < lim[1]):
                problems.append(f"{where} ('{t['name']}'): limits must be [low, high] finite with low < high, "
                                f"got {lim!r}")
                continue
            if "safe_action" in t:
                bad = safe_action_problem(t["safe_action"], lim)
                if bad or t["safe_action"] is None:
                    problems.append(f"{where} ('{t['name']}'): {bad or 'safe_action must not be empty'}")
            if kind == "discrete":
                ch = t.get("choices")
                if not (isinstance(ch, list) and ch and all(_finite(c) and lim[0] <= c <= lim[1] for c in ch)):
                    problems.append(f"{where} ('{t['name']}'): choices must be numbers within limits {lim}, got {ch!r}")
            else:
                for k in ("scale", "offset"):
                    if not _finite(t.get(k)):
                        problems.append(f"{where} ('{t['name']}'): {k} must be a finite number, got {t.get(k)!r}")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            problems.append(f"io.yaml: duplicate {section} names {dup}")
    _check_images(io, problems)


def _check_images(io: Dict[str, Any], problems: List[str]) -> None:
    """The optional ``image_observation`` section and its ``model.image_inputs`` entries."""
    from .images import check_term

    terms = io.get("image_observation")
    declared = io["model"].get("image_inputs")
    if terms is None and declared is None:
        return
    if not isinstance(terms, list) or not terms:
        problems.append("io.yaml: 'image_observation' must be a non-empty list of image terms when present")
        return
    if not isinstance(declared, list):
        problems.append("io.yaml: model.image_inputs must list the ONNX input of every image term")
        return
    by_name = {d.get("name"): d for d in declared if isinstance(d, dict)}
    inputs = []
    for i, t in enumerate(terms):
        found = check_term(t, f"io.yaml: image_observation[{i}] ")
        problems.extend(found)
        if found:
            continue
        inputs.append(t["input"])
        want = [None, t["stack"]["depth"] * (1 if t["encoding"] == "mono8" else 3),
                t["resize"]["height"], t["resize"]["width"]]
        d = by_name.get(t["input"])
        if d is None:
            problems.append(f"io.yaml: image_observation[{i}] ('{t['name']}'): input '{t['input']}' is not in "
                            f"model.image_inputs")
        elif list(d.get("shape") or []) != want or d.get("dtype") != "uint8":
            problems.append(f"io.yaml: model.image_inputs '{t['input']}': shape {d.get('shape')} dtype "
                            f"{d.get('dtype')!r}, but its image term gives {want} uint8 (depth * channels, h, w)")
    dup = sorted({n for n in inputs if inputs.count(n) > 1})
    if dup:
        problems.append(f"io.yaml: image terms share ONNX input(s) {dup}")
    extra = sorted(set(by_name) - set(inputs))
    if extra and not problems:
        problems.append(f"io.yaml: model.image_inputs {extra} belong to no image term")


def _dim(d: Any) -> Optional[int]:
    """A static dimension of an onnxruntime shape (an int), or None for a symbolic/unknown one."""
    return d if isinstance(d, int) and not isinstance(d, bool) else None


def _check_onnx(path: str, io: Dict[str, Any], problems: List[str]):
    """Open the model with onnxruntime alone (no ``onnx`` package: the robot side has none) and
    check its input/output names and shapes against the descriptor, then run it on zeros."""
    import onnxruntime as ort

    try:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # InvalidProtobuf, Fail, InvalidGraph, ...
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        problems.append(f"policy.onnx: not a valid ONNX model: {type(exc).__name__}: {first_line}")
        return None
    n_obs = len(io.get("observation") or [])
    n_act = len(io.get("action") or [])
    discrete = io["model"]["output"].get("kind") == "discrete"
    inputs, outputs = session.get_inputs(), session.get_outputs()
    images = {d["name"]: d for d in io["model"].get("image_inputs") or []}
    want_inputs = ["obs"] + sorted(images)
    if sorted(i.name for i in inputs) != sorted(want_inputs):
        problems.append(f"policy.onnx: expected input(s) {want_inputs}, got {[i.name for i in inputs]}")
        return None
    for inp in inputs:
        if inp.name in images:
            dims = [_dim(d) for d in inp.shape]
            if dims[1:] != images[inp.name]["shape"][1:] or inp.type != "tensor(uint8)":
                problems.append(f"policy.onnx: input '{inp.name}' is {inp.type} {dims}, io.yaml declares uint8 "
                                f"{images[inp.name]['shape']}")
    inputs = [i for i in inputs if i.name == "obs"]
    if len(outputs) != 1 or outputs[0].name != "action":
        problems.append(f"policy.onnx: expected one output named 'action', got {[o.name for o in outputs]}")
        return None
    in_dims = [_dim(d) for d in inputs[0].shape]
    if len(in_dims) != 2 or in_dims[1] != n_obs:
        problems.append(f"policy.onnx: input 'obs' has shape {in_dims}, but io.yaml declares {n_obs} observation terms")
    out_dims = [_dim(d) for d in outputs[0].shape]
    if discrete and len(out_dims) != 1:
        problems.append(f"policy.onnx: discrete output 'action' must be (batch,), got {out_dims}")
    if not discrete and (len(out_dims) != 2 or out_dims[1] != n_act):
        problems.append(f"policy.onnx: output 'action' has shape {out_dims}, but io.yaml declares {n_act} action terms")
    if problems:
        return None
    try:
        feed = {"obs": np.zeros((2, n_obs), np.float32)}
        feed.update({k: np.zeros([2] + d["shape"][1:], np.uint8) for k, d in images.items()})
        out = session.run(None, feed)[0]
    except Exception as exc:
        problems.append(f"policy.onnx: onnxruntime cannot run it: {exc}")
        return None
    if discrete:
        n = len(io["action"][0].get("choices") or [])
        if out.shape != (2,) or not np.all((out >= 0) & (out < n)):
            problems.append(f"policy.onnx: discrete output {out.tolist()} is not an index into {n} choices")
    elif out.shape != (2, n_act) or not np.all(np.isfinite(out)) or np.any(np.abs(out) > 1.0 + 1e-6):
        problems.append(f"policy.onnx: output on zeros has shape {out.shape} / values outside [-1, 1]: {out.tolist()}")
    return session


def load(path: str) -> Bundle:
    """Load and validate a bundle; raise :class:`BundleError` listing every problem found."""
    path = os.path.normpath(path)
    if not os.path.isdir(path):
        raise BundleError(path, ["no such bundle directory" if not os.path.exists(path) else "not a directory"])
    problems: List[str] = []
    missing = [f for f in REQUIRED_FILES if not os.path.isfile(os.path.join(path, f))]
    if missing:
        raise BundleError(path, [f"missing file(s): {', '.join(missing)}"])
    io = _read_yaml(os.path.join(path, "io.yaml"), problems)
    prov = _read_yaml(os.path.join(path, "provenance.yaml"), problems)
    ev = _read_yaml(os.path.join(path, "evaluation.yaml"), problems)
    if prov is not None:
        miss = [k for k in PROVENANCE_KEYS if k not in prov]
        if miss:
            problems.append(f"provenance.yaml: missing {miss}")
    if ev is not None:
        miss = [k for k in EVALUATION_KEYS if k not in ev]
        if miss:
            problems.append(f"evaluation.yaml: missing {miss}")
    onnx_path = os.path.join(path, "policy.onnx")
    if prov is not None and prov.get("policy_onnx_sha256"):
        with open(onnx_path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != prov["policy_onnx_sha256"]:
            problems.append("policy.onnx: sha256 differs from provenance.yaml policy_onnx_sha256 (corrupt or replaced)")
    session = None
    if io is not None:
        _check_io(io, problems)
        if not problems:
            session = _check_onnx(onnx_path, io, problems)
    if problems:
        raise BundleError(path, problems)
    return Bundle(path, io, prov, ev, session)


def validate(path: str) -> Bundle:
    return load(path)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlstack_bundle", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="check bundles; exit 1 if any is invalid")
    v.add_argument("paths", nargs="+")
    i = sub.add_parser("info", help="print a bundle's IO and evaluation summary")
    i.add_argument("path")
    args = parser.parse_args(argv)
    if args.cmd == "validate":
        bad = 0
        for path in args.paths:
            try:
                b = load(path)
            except BundleError as exc:
                print(exc, file=sys.stderr)
                bad += 1
                continue
            imgs = "".join(f" + image {d['name']} {d['shape'][1:]}" for d in b.io["model"].get("image_inputs") or [])
            print(f"ok: {path} ({b.io['task']}, {b.obs_dim} obs{imgs} -> "
                  f"{'discrete ' if b.discrete else ''}{len(b.io['action'])} action(s) "
                  f"@ {b.io['control_rate_hz']:g} Hz)")
        return 1 if bad else 0
    try:
        b = load(args.path)
    except BundleError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{b.path}: task {b.io['task']} ({b.io['env_id']}), {b.provenance['algorithm']}, "
          f"{b.provenance['timesteps']} steps, {b.provenance['wall_time_s']:.0f} s")
    for t in b.io["observation"]:
        s = t["source"]
        key = " " + s["key"] if s.get("key") else ""
        print(f"  obs[{t['index']}] {t['name']} [{t['unit']}] <- {s['topic']} {s['field']}{key}")
    for t in b.io.get("image_observation") or []:
        c, r, st = t["crop"], t["resize"], t["stack"]
        print(f"  image {t['name']} <- {t['source']['topic']} {t['encoding']} {t['width']}x{t['height']}, crop "
              f"{c['width']}x{c['height']}+{c['x']}+{c['y']} -> {r['width']}x{r['height']}, stack {st['depth']} "
              f"stride {st['stride']} -> input '{t['input']}'")
    for t in b.io["action"]:
        print(f"  act[{t['index']}] {t['name']} [{t['unit']}] -> {t['target']['topic']} {t['target']['field']} "
              f"limits {t['limits']}")
    print(f"  success rate: {b.evaluation['success_rate']} over {b.evaluation['episodes']} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
