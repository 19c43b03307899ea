"""SB3 policy -> ONNX with the observation normalisation folded in.

The exported graph maps raw (scaled) observations ``obs`` (batch, n_obs) float32 to

* continuous: ``action`` (batch, n_act) float32, the deterministic action clipped to [-1, 1]
  (what ``model.predict(normalize(obs), deterministic=True)`` returns);
* discrete: ``action`` (batch,) int64, the arg-max action.

One small module per algorithm family, written out so it can be read:
PPO/A2C (actor-critic: features -> actor MLP -> action_net mean), SAC/TQC (actor, tanh-
squashed mean), TD3 (deterministic actor), DQN (arg-max of the Q network).
"""

from __future__ import annotations

import io
import warnings
from typing import Optional

import numpy as np
import torch
from torch import nn

OPSET = 17


class ObsNormalizer(nn.Module):
    """``clip((obs - mean) / sqrt(var + eps), -clip, clip)``, SB3 ``VecNormalize`` semantics."""

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float) -> None:
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float32))
        self.register_buffer("std", torch.sqrt(torch.as_tensor(np.asarray(var) + epsilon, dtype=torch.float32)))
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)


class ActorCriticActor(nn.Module):
    def __init__(self, policy, discrete: bool) -> None:
        super().__init__()
        self.features = policy.pi_features_extractor
        self.mlp = policy.mlp_extractor
        self.action_net = policy.action_net
        self.discrete = discrete

    def forward(self, x):
        latent = self.mlp.forward_actor(self.features(x))
        out = self.action_net(latent)
        return torch.argmax(out, dim=1) if self.discrete else torch.clamp(out, -1.0, 1.0)


class SquashedActor(nn.Module):  # SAC, TQC
    def __init__(self, policy) -> None:
        super().__init__()
        self.actor = policy.actor

    def forward(self, x):
        # tanh of the Gaussian mean = actor(x, deterministic=True), written out so the traced
        # graph keeps a static action dimension (through the distribution object it is symbolic)
        if getattr(self.actor, "use_sde", False):
            return torch.clamp(self.actor(x, deterministic=True), -1.0, 1.0)
        mean_actions, _, _ = self.actor.get_action_dist_params(x)
        return torch.clamp(torch.tanh(mean_actions), -1.0, 1.0)


class DeterministicActor(nn.Module):  # TD3, DDPG
    def __init__(self, policy) -> None:
        super().__init__()
        self.actor = policy.actor

    def forward(self, x):
        return torch.clamp(self.actor(x), -1.0, 1.0)


class QArgmax(nn.Module):  # DQN
    def __init__(self, policy) -> None:
        super().__init__()
        self.q_net = policy.q_net

    def forward(self, x):
        return torch.argmax(self.q_net(x), dim=1)


class ExportedPolicy(nn.Module):
    def __init__(self, normalizer: Optional[ObsNormalizer], actor: nn.Module) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.actor = actor

    def forward(self, obs):
        x = self.normalizer(obs) if self.normalizer is not None else obs
        return self.actor(x)


def exportable(model, obs_rms=None, clip_obs: float = 10.0, epsilon: float = 1e-8) -> ExportedPolicy:
    """Wrap a trained SB3 model (and its ``VecNormalize.obs_rms``, if any) as one torch module."""
    import gymnasium as gym
    from stable_baselines3.common.policies import ActorCriticPolicy

    policy = model.policy
    discrete = isinstance(model.action_space, gym.spaces.Discrete)
    if isinstance(policy, ActorCriticPolicy):
        if getattr(policy, "use_sde", False):
            raise ValueError("export of gSDE policies is not supported")
        actor = ActorCriticActor(policy, discrete)
    elif hasattr(policy, "q_net"):
        actor = QArgmax(policy)
    elif hasattr(policy, "actor") and "deterministic" in policy.actor.forward.__code__.co_varnames:
        actor = SquashedActor(policy)
    elif hasattr(policy, "actor"):
        actor = DeterministicActor(policy)
    else:  # pragma: no cover
        raise ValueError(f"don't know how to export {type(policy).__name__}")
    norm = ObsNormalizer(obs_rms.mean, obs_rms.var, epsilon, clip_obs) if obs_rms is not None else None
    module = ExportedPolicy(norm, actor).eval()
    return module


def to_onnx_bytes(module: nn.Module, n_obs: int) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # legacy-exporter deprecation and tracer notices
        torch.onnx.export(
            module, (torch.zeros(1, n_obs),), buf, dynamo=False, opset_version=OPSET,
            input_names=["obs"], output_names=["action"],
            dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}},
        )
    return buf.getvalue()


def sb3_deterministic_action(model, obs: np.ndarray, vecnorm=None) -> np.ndarray:
    """What the trained policy does (the reference the ONNX graph must match)."""
    x = vecnorm.normalize_obs(obs) if vecnorm is not None else obs
    action, _ = model.predict(x, deterministic=True)
    return action
