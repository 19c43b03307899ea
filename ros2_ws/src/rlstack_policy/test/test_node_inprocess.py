"""The node in a fresh interpreter: configure imports no torch and loads no pickle; bad bundles
leave it unconfigured with a clear error (the integration tests in tests/ do it across processes)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

SCRIPT = textwrap.dedent("""
    import pickle, sys
    def _no_pickle(*a, **k):
        raise AssertionError("pickle load at run time")
    pickle.load = pickle.loads = _no_pickle
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.lifecycle import TransitionCallbackReturn
    rclpy.init(domain_id=int(sys.argv[2]),
               args=["--ros-args", "-p", "bundle_path:=" + sys.argv[1],
                     "-p", "key_indices:=[" + (sys.argv[3] if len(sys.argv) > 3 else "ball=0") + "]"])
    from rlstack_policy.policy_node import PolicyNode
    node = PolicyNode()
    ok = node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    act = ok and node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    print("MODULES", *[m for m in ("torch", "stable_baselines3", "gymnasium", "sim_bridges", "pybullet")
                       if m in sys.modules])
    print("RESULT", ok, act, "torch" in sys.modules, "stable_baselines3" in sys.modules, repr(node._last_error))
    node.destroy_node()
    rclpy.shutdown()
""")


def run(bundle: str, key_indices: str = "ball=0", modules: list = None):
    from rlstack_testing.domain import lease_domain_id

    with lease_domain_id() as lease:
        out = subprocess.run([sys.executable, "-c", SCRIPT, bundle, str(lease.domain_id), key_indices],
                             capture_output=True, text=True, timeout=60)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, out.stdout + out.stderr
    if modules is not None:
        modules.extend(next(ln for ln in out.stdout.splitlines() if ln.startswith("MODULES")).split()[1:])
    return line[0].split(" ", 5)[1:], out.stderr


def test_configure_loads_no_torch_and_no_pickle():
    (ok, act, torch, sb3, err), _ = run(str(REPO / "policies/ball_plate"))
    assert (ok, act, torch, sb3) == ("True", "True", "False", "False"), err


def test_lift_bundle_configures_without_training_stack():
    """The lift descriptor (tf_position, sum, sin/cos_kyaw, offset_minus, distance) compiles; configure
    imports no torch, SB3, gymnasium, sim_bridges or pybullet (bundles come from rlstack_bundle)."""
    loaded = []
    (ok, act, torch, sb3, err), _ = run(str(REPO / "policies/lift"), "red_cube=1", loaded)
    assert (ok, act, torch, sb3) == ("True", "True", "False", "False"), err
    assert loaded == [], loaded


def test_missing_bundle_stays_unconfigured_with_clear_error(tmp_path):
    (ok, act, _, _, err), log = run(str(tmp_path / "nope"))
    assert ok == "False" and "no such bundle directory" in err and "no such bundle directory" in log
