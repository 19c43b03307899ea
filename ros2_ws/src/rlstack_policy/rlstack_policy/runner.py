"""A loaded bundle and one control step of the policy node, without rclpy.

The node (:mod:`rlstack_policy.policy_node`) owns the parameters, topics, timers and lifecycle;
everything it decides lives here:

* :func:`prepare`: a validated bundle (``rlstack_bundle.bundle.load``) compiled against the ROS
  message types into a :class:`LoadedPolicy` (plans, assembler, shaper, onnxruntime session);
* :func:`check_swap`: the quick checks of a run-time bundle swap (folder, ``io.yaml``, the wired
  topics and types) before anything is loaded;
* :func:`hand_over`: a swapped-in bundle takes over the newest observations and the last command;
* :func:`control_step`: observation -> network -> command, or the safe action with its reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import yaml

from .actions import ActionShaper, parse_max_rate, parse_safe
from .messages import SpecError
from .observations import ObservationAssembler
from .plan import ActPlan, ObsPlan, compile_io, descriptor_topics, parse_key_indices, parse_remaps, wiring_mismatch


@dataclass
class ServeOptions:
    """The node parameters that shape how a bundle is served (all taken at configure)."""

    key_indices: Sequence[str] = ()
    topic_remaps: Sequence[str] = ()
    safe_action: Sequence[Any] = ()
    max_rate: Sequence[float] = ()
    rate_hz: float = 0.0            # 0: the bundle's control_rate_hz
    stale_periods: float = 3.0


class LoadedPolicy:
    """A bundle ready to run: session, plans, assembler, shaper."""

    def __init__(self, bundle: Any, obs_plan: ObsPlan, act_plan: ActPlan, safe: List[Any],
                 max_rate: np.ndarray, rate_hz: float, stale_periods: float) -> None:
        self.bundle = bundle
        self.path = bundle.path
        self.io = bundle.io
        self.task = bundle.io.get("task", "?")
        self.obs_plan, self.act_plan = obs_plan, act_plan
        self.rate_hz = rate_hz
        self.period_s = 1.0 / rate_hz
        bundle_period = 1.0 / float(bundle.io["control_rate_hz"])
        # the policy's own command topics read back as observations hold until the next command
        own_commands = set(act_plan.topics) & {t.topic for t in obs_plan.terms if not t.from_terms}
        self.assembler = ObservationAssembler(obs_plan, bundle_period, stale_periods * self.period_s,
                                              latched_topics=own_commands)
        self.shaper = ActionShaper(act_plan, rate_hz, max_rate, safe)
        self.session = bundle.session
        self.output_name = self.session.get_outputs()[0].name
        self.x = np.zeros((1, obs_plan.size), dtype=np.float32)

    def act(self, obs: np.ndarray) -> np.ndarray:
        self.x[0, :] = obs
        feed = {"obs": self.x}
        for name, stack in self.assembler.images.items():   # pixel bundles: the stacked frames of each image term
            feed[name] = stack[None]
        return self.session.run([self.output_name], feed)[0][0]


def _plans(io: Mapping[str, Any], opts: ServeOptions) -> Tuple[ObsPlan, ActPlan, List[Any], np.ndarray]:
    obs_plan, act_plan = compile_io(io, parse_key_indices(opts.key_indices), parse_remaps(opts.topic_remaps))
    safe = parse_safe(opts.safe_action, act_plan, io)
    max_rate = parse_max_rate(opts.max_rate, act_plan, io)
    return obs_plan, act_plan, safe, max_rate


def prepare(path: str, opts: ServeOptions, bundle: Any = None) -> LoadedPolicy:
    """Load (unless ``bundle`` is given) and compile a bundle; raise with a readable message
    (``BundleError``, :class:`SpecError`)."""
    if bundle is None:
        from rlstack_bundle.bundle import load  # numpy/yaml/onnxruntime only; no torch, no pickle

        bundle = load(path)
    io = bundle.io
    obs_plan, act_plan, safe, max_rate = _plans(io, opts)
    rate = opts.rate_hz or float(io["control_rate_hz"])
    return LoadedPolicy(bundle, obs_plan, act_plan, safe, max_rate, rate, opts.stale_periods)


def check_swap(path: str, opts: ServeOptions, wired_obs: Mapping[str, str], wired_act: Mapping[str, str]) -> str:
    """Fast checks of a swap before loading: folder, io.yaml, wiring. '' = go ahead."""
    path = os.path.abspath(path or "")
    io_path = os.path.join(path, "io.yaml")
    if not os.path.isdir(path):
        return f"no such bundle directory '{path}'"
    try:
        with open(io_path, encoding="utf-8") as f:
            io = yaml.safe_load(f)
        if not isinstance(io, dict):
            raise SpecError("not a YAML mapping")
        obs_topics, act_topics = descriptor_topics(io, parse_remaps(opts.topic_remaps))
        problems = wiring_mismatch(wired_obs, wired_act, obs_topics, act_topics)
        if problems:
            return "; ".join(problems)
        obs_plan, act_plan, _, _ = _plans(io, opts)
    except Exception as exc:
        return f"{io_path}: {exc}"
    return "; ".join(wiring_mismatch(wired_obs, wired_act, obs_plan, act_plan))


def load_for_swap(path: str, opts: ServeOptions, wired_obs: Mapping[str, str], wired_act: Mapping[str, str]) -> Any:
    """The swap thread's work: a :class:`LoadedPolicy`, or the reason (a string) it was refused."""
    try:
        loaded = prepare(os.path.abspath(path), opts)
        problems = wiring_mismatch(wired_obs, wired_act, loaded.obs_plan, loaded.act_plan)
        return "; ".join(problems) if problems else loaded
    except Exception as exc:
        return str(exc).replace("\n", " ")


def hand_over(old: LoadedPolicy, new: LoadedPolicy) -> None:
    """The new bundle starts from the old one's newest observations and last command."""
    old.assembler.replay_into(new.assembler)
    new.assembler.mark_step()
    if old.shaper.last is not None and new.act_plan.size == old.act_plan.size:
        new.shaper.commit(old.shaper.last)


def control_step(loaded: LoadedPolicy, now: float, estop_latched: bool) -> Tuple[np.ndarray, Optional[str]]:
    """(command, fault): the policy's command, or the safe action and why (``fault`` not None)."""
    fault = "e-stop latched" if estop_latched else None
    obs = None
    if fault is None:
        obs, fault = loaded.assembler.assemble(now)
    cmd = None
    if fault is None:
        out = loaded.act(obs)
        try:
            if not np.all(np.isfinite(out)):
                raise ValueError(f"network output not finite: {out.tolist()}")
            cmd = loaded.shaper.command(out)
        except ValueError as exc:
            fault = str(exc)
    loaded.assembler.mark_step()
    if fault is not None:
        cmd = loaded.shaper.safe()
    return cmd, fault


def fault_reason(fault: str) -> str:
    """The first word of a fault (stale, non_finite, waiting, e-stop, ...), for the diagnostics' counts."""
    return fault.split(":")[0].split()[0] if fault.strip() else "unknown"


def diagnostic_values(loaded: Optional[LoadedPolicy], summary: Dict[str, Any], fault: Optional[str],
                      stale_events: int, safe_steps_by_reason: Mapping[str, int]) -> Dict[str, Any]:
    """The bundle's part of the node's diagnostics (empty without a bundle)."""
    if loaded is None:
        return {}
    shaper = loaded.shaper
    return {
        "task": loaded.task, "control_rate_hz": loaded.rate_hz,
        **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in summary.items()},
        "safe_reason": fault or "none", "stale_events": stale_events,
        "safe_steps_by_reason": ",".join(f"{k}={n}" for k, n in sorted(safe_steps_by_reason.items())) or "none",
        "clipped": shaper.clipped, "rate_limited": shaper.rate_limited,
        "last_command": [round(float(c), 6) for c in (shaper.last if shaper.last is not None else [])],
    }
