"""``SimTaskEnv``: a Gymnasium env on the ``sim_bridges`` backend contract.

Env / task / robot are kept apart (as in panda-gym): the robot and scene live in
``sim_bridges``; a task subclass says which scene it loads, its observation and action
terms, how an action becomes backend commands, and its reward and termination. This base
class owns the backend, seeding, domain randomisation, the actuator-delay queue, rendering
and the bookkeeping that keeps *termination* (a failure: no bootstrap) apart from
*truncation* (the time limit ``max_episode_steps``, handled here so that the env alone
decides both flags: bootstrapped by SB3). ``info['is_success']`` is set at the end of an
episode: True when the time limit was reached without a failure.

Seeding: ``reset(seed=s)`` plays episode ``s`` exactly (sim state, DR draws, noise);
``reset()`` draws the next episode seed from ``np_random`` in ``[0, TRAIN_SEED_LIMIT)``.
Evaluation uses seeds at or above ``EVAL_SEED_BASE``, which training never draws.
"""

from __future__ import annotations

import collections
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from rlstack_bundle.terms import ActTerm, ObsTerm, check_terms, io_descriptor
from sim_bridges import make_backend

from ..randomization import DomainRandomization

#: Episode seeds drawn during training lie in [0, TRAIN_SEED_LIMIT).
TRAIN_SEED_LIMIT = 2**29
#: Validation episodes (best-model selection while training) use seeds from here.
VALIDATION_SEED_BASE = 2**29
#: Final evaluation (model cards) uses seeds from here: never seen in training or validation.
EVAL_SEED_BASE = 2**30


class SimTaskEnv(gym.Env):
    """Base class of every rlstack task env. Subclasses set the class attributes and hooks."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    # ---- set by subclasses
    task_name: str = ""
    env_id: str = ""
    scene: str = ""
    scene_options: Dict[str, Any] = {}
    control_rate_hz: float = 60.0
    max_episode_steps: int = 500
    reset_mode: str = "rebuild"
    camera: Optional[str] = None
    obs_terms: Sequence[ObsTerm] = ()
    act_terms: Sequence[ActTerm] = ()
    discrete: bool = False
    default_randomization = DomainRandomization()
    io_notes: Sequence[str] = ()
    #: joint name -> limit: the episode terminates exactly when some |joint position| > its limit.
    #: Set only when that *is* :meth:`_reward_terminated`'s whole rule (cart-pole); a batch bridge then
    #: ends and resets such episodes within the step call (no second round trip).
    end_joint_limits: Dict[str, float] = {}

    def __init__(self, render_mode: Optional[str] = None, randomize: Any = False,
                 backend: str = "pybullet", physics_rate_hz: float = 240.0) -> None:
        super().__init__()
        check_terms(self.obs_terms, self.act_terms)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, render_fps=int(round(self.control_rate_hz)))
        self.dr = DomainRandomization.make(randomize, self.default_randomization)
        kwargs = {"reset_mode": self.reset_mode} if backend == "pybullet" else {}
        self.sim = make_backend(backend, physics_rate_hz=physics_rate_hz,
                                control_rate_hz=self.control_rate_hz, **kwargs)
        self.sim.load_scene(self.scene, **self.scene_options)
        if self.dr is not None and self.dr.changes_dynamics:
            try:
                self.sim.dynamics_bodies()
            except NotImplementedError:
                from sim_bridges import NotSupported
                raise NotSupported("mass/friction randomisation", self.scene,
                                   ["action delay", "observation noise"]) from None

        obs_scale = np.array([t.scale for t in self.obs_terms], dtype=np.float64)
        self._obs_scale = obs_scale
        self._obs_noise = np.array([t.noise_std for t in self.obs_terms], dtype=np.float64)
        n_obs = len(self.obs_terms)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(n_obs,), dtype=np.float32)
        if self.discrete:
            self.action_space = gym.spaces.Discrete(len(self.act_terms[0].choices))
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(len(self.act_terms),), dtype=np.float32)
        self._rng = np.random.default_rng(0)  # per-episode stream (DR, noise, task sampling)
        self._delay: collections.deque = collections.deque()
        self.episode_seed: Optional[int] = None
        self.episode_dr: Dict[str, Any] = {}
        self.steps = 0

    # ------------------------------------------------------------ hooks
    def _before_sim_reset(self, episode_seed: int) -> None:
        """Before the backend reset of episode ``episode_seed``: e.g. load another variant of the scene."""

    def _reload_scene(self, **options: Any) -> None:
        """Load the task's scene again with ``options`` on top of ``scene_options`` (a variant: another
        support)."""
        self.sim.load_scene(self.scene, **{**self.scene_options, **options})

    def _task_reset(self, rng: np.random.Generator) -> None:
        """Task-specific randomisation after the backend reset (e.g. initial velocities)."""

    def sim_free_episode_start(self) -> None:
        """Start of an episode on a sim-free instance (``object.__new__(cls)``: the envs over ROS use
        its reward/termination hooks and action mapping): reset whatever state those hooks keep.
        No simulator access here."""

    def _apply_command(self, command: np.ndarray) -> None:
        """Send physical commands (term units, already clipped to limits) to the backend."""
        raise NotImplementedError

    def _raw_obs(self) -> np.ndarray:
        """Observation in raw SI units, term order (before scale and noise)."""
        raise NotImplementedError

    def _reward_terminated(self, raw_obs: np.ndarray, command: np.ndarray) -> Tuple[float, bool, Dict[str, Any]]:
        raise NotImplementedError

    def _neutral_command(self) -> np.ndarray:
        return np.array([t.offset for t in self.act_terms], dtype=np.float64)

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(0, TRAIN_SEED_LIMIT))
        self.episode_seed = episode_seed
        self._before_sim_reset(episode_seed)
        self.sim.reset(episode_seed)
        # one generator per episode, independent of the sim's own use of the seed
        self._rng = np.random.default_rng([episode_seed, 0x5EED])
        self.episode_dr = self._sample_randomization(self._rng)
        self._task_reset(self._rng)
        self._delay = collections.deque([self._neutral_command()] * self.episode_dr.get("action_delay_steps", 0))
        self._apply_command(self._neutral_command())
        self.steps = 0
        raw = self._raw_obs()
        info = {"episode_seed": episode_seed, "randomization": dict(self.episode_dr)}
        return self._observe(raw), info

    def step(self, action):
        command = self.action_to_command(action)
        self._delay.append(command)
        applied = self._delay.popleft()
        self._apply_command(applied)
        self.sim.step(1)
        self.steps += 1
        raw = self._raw_obs()
        reward, terminated, info = self._reward_terminated(raw, command)
        truncated = not terminated and self.steps >= self.max_episode_steps
        if terminated or truncated:
            info.setdefault("is_success", bool(truncated))  # a task may decide itself (lift)
        return self._observe(raw), float(reward), bool(terminated), bool(truncated), info

    def render(self):
        if self.render_mode != "rgb_array" or self.camera is None:
            return None
        return np.asarray(self.sim.camera_frame(self.camera).rgb)

    def close(self) -> None:
        sim = getattr(self, "sim", None)
        if sim is not None:
            sim.close()
            self.sim = None

    # ------------------------------------------------------------ helpers
    def action_to_command(self, action) -> np.ndarray:
        """Network action -> physical command, exactly as ``io.yaml`` tells a policy node."""
        if self.discrete:
            idx = int(np.asarray(action).reshape(-1)[0])
            return np.array([self.act_terms[0].choices[idx]], dtype=np.float64)
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(-1), -1.0, 1.0)
        cmd = np.array([t.offset + t.scale * a[j] for j, t in enumerate(self.act_terms)])
        lo = np.array([t.limits[0] for t in self.act_terms])
        hi = np.array([t.limits[1] for t in self.act_terms])
        return np.clip(cmd, lo, hi)

    def _observe(self, raw: np.ndarray) -> np.ndarray:
        if self.dr is not None and self.dr.obs_noise_scale > 0:
            raw = raw + self._rng.normal(0.0, 1.0, raw.shape) * self._obs_noise * self.dr.obs_noise_scale
        return (raw * self._obs_scale).astype(np.float32)

    def _sample_randomization(self, rng: np.random.Generator) -> Dict[str, Any]:
        if self.dr is None:
            return {}
        dr = self.dr
        out: Dict[str, Any] = {}
        if dr.changes_dynamics:
            bodies = self.sim.dynamics_bodies()
            mass = {b: float(rng.uniform(*dr.mass_scale)) for b in bodies}
            friction = {b: float(rng.uniform(*dr.friction_scale)) for b in bodies}
            self.sim.set_dynamics_scale(mass, friction)
            out["mass_scale"] = [round(mass[b], 4) for b in bodies]
            out["friction_scale"] = [round(friction[b], 4) for b in bodies]
        lo, hi = dr.action_delay_steps
        out["action_delay_steps"] = int(rng.integers(lo, hi + 1))
        return out

    @classmethod
    def io_descriptor(cls) -> Dict[str, Any]:
        return io_descriptor(cls.task_name, cls.env_id, cls.control_rate_hz, cls.obs_terms,
                             cls.act_terms, cls.discrete, cls.io_notes)


def term_names(terms: Sequence[Any]) -> List[str]:
    return [t.name for t in terms]
