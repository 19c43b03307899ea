"""check_env on every environment; seeding, termination vs truncation, randomisation, IO terms."""

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env

import rlstack_learning  # noqa: F401  (registers the envs)
from rlstack_learning.envs import ENVS

ALL_IDS = sorted(ENVS)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped, warn=True, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["RlStack/CartPole-v0", "RlStack/BallPlate-v0"])
def test_check_env_with_domain_randomisation(env_id):
    env = gym.make(env_id, randomize=True)
    try:
        check_env(env.unwrapped, warn=True, skip_render_check=True)
        _, info = env.reset(seed=5)
        dr = info["randomization"]
        assert set(dr) >= {"mass_scale", "friction_scale", "action_delay_steps"}
    finally:
        env.close()


def _rollout(env, seed, n=40):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    rng = np.random.default_rng(0)
    for _ in range(n):
        obs, r, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        out.append(obs)
        if term or trunc:
            break
    return np.array(out)


@pytest.mark.parametrize("env_id", ["RlStack/CartPole-v0", "RlStack/BallPlate-v0"])
@pytest.mark.parametrize("randomize", [False, True])
def test_same_seed_same_episode(env_id, randomize):
    a, b = gym.make(env_id, randomize=randomize), gym.make(env_id, randomize=randomize)
    try:
        _rollout(a, 99, 10)  # history must not matter
        np.testing.assert_array_equal(_rollout(a, 7), _rollout(b, 7))
        assert not np.array_equal(_rollout(a, 7)[0], _rollout(a, 8)[0])
    finally:
        a.close()
        b.close()


def test_failure_terminates_and_time_limit_truncates():
    env = gym.make("RlStack/CartPole-v0")
    try:
        env.reset(seed=1)
        for _ in range(500):  # full push: the pole falls -> terminated, not truncated
            _, _, term, trunc, info = env.step(np.ones(1, np.float32))
            if term or trunc:
                break
        assert term and not trunc and info["is_success"] is False
        env.unwrapped.max_episode_steps = 3
        env.reset(seed=1)
        flags = [env.step(np.zeros(1, np.float32))[2:4] for _ in range(3)]
        assert flags == [(False, False), (False, False), (False, True)]
    finally:
        env.close()


def test_ball_plate_starts_within_spec():
    env = gym.make("RlStack/BallPlate-v0")
    try:
        speeds, offsets = [], []
        for seed in range(20):
            env.reset(seed=seed)
            ball = env.unwrapped.sim.ground_truth()["ball"]
            offsets.append(np.max(np.abs(ball.pose.position[:2])))
            speeds.append(np.linalg.norm(ball.velocity.linear[:2]))
        assert max(offsets) <= 0.08 + 1e-9 and max(speeds) <= 0.15 + 1e-9
        assert max(speeds) > 0.05  # the ball does move at the start
        # ball falls off a fully tilted plate -> terminated
        env.reset(seed=0)
        for _ in range(300):
            _, _, term, trunc, _ = env.step(np.ones(2, np.float32))
            if term or trunc:
                break
        assert term and not trunc
    finally:
        env.close()


def test_action_delay_shifts_commands():
    env = gym.make("RlStack/CartPole-v0", randomize={"action_delay_steps": [1, 1], "mass_scale": [1, 1],
                                                     "friction_scale": [1, 1], "obs_noise_scale": 0.0})
    ref = gym.make("RlStack/CartPole-v0")
    try:
        acts = [np.array([0.0], np.float32)] + [np.array([0.7], np.float32)] * 5
        env.reset(seed=3)
        ref.reset(seed=3)
        delayed = [env.step(a)[0] for a in acts[1:]]
        direct = [ref.step(a)[0] for a in acts[:-1]]
        np.testing.assert_allclose(delayed, direct, atol=1e-6)
    finally:
        env.close()
        ref.close()


def test_bad_randomisation_field_is_named():
    with pytest.raises(ValueError, match="mass_scael"):
        gym.make("RlStack/CartPole-v0", randomize={"mass_scael": [0.9, 1.1]})
    with pytest.raises(ValueError, match="action_delay_steps"):
        gym.make("RlStack/CartPole-v0", randomize={"action_delay_steps": [2, 1]})


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_io_descriptor_matches_spaces(env_id):
    cls = ENVS[env_id]
    io = cls.io_descriptor()
    assert len(io["observation"]) == len(cls.obs_terms)
    for t in io["observation"]:
        assert t["source"]["topic"].startswith("/") and t["unit"]
    if cls.discrete:
        assert io["model"]["output"]["kind"] == "discrete"
    else:
        assert io["model"]["output"]["shape"] == [None, len(cls.act_terms)]


def test_lift_scripted_expert_lifts_the_cube():
    from rlstack_learning.envs.lift import scripted_expert
    from rlstack_learning.evaluate import run_episodes

    env = gym.make("RlStack/PandaLift-v0")
    try:
        res = run_episodes(env, scripted_expert(env.unwrapped), [2**30 + i for i in range(3)])
        assert res["success_rate"] == 1.0, res
        assert res["min_length"] >= 40  # success needs the cube held >= 10 cm up for 40 steps (2 s)
        env.reset(seed=0)  # doing nothing: truncated, not a success
        for _ in range(200):
            _, _, term, trunc, info = env.step(np.array([0, 0, 0, 1], np.float32))
            if term or trunc:
                break
        assert trunc and not term and info["is_success"] is False
    finally:
        env.close()
