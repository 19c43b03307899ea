"""Ball-on-plate from pixels: the ``ball_plate`` task seen through the bridge's overhead camera.

The robot side gets no ball pose: the policy sees the ``overhead_camera`` frame (320x240
``rgb8``, oblique, fixed in the world) cropped to the plate (128x128 at x = 96, y = 56) and
area-averaged to 64x64, the last :data:`STACK_DEPTH` frames stacked (stride 1 control period,
by stamp), plus the measured plate angles from ``/joint_states``. The crop and resize are
:func:`rlstack_bundle.images.preprocess`, the same function the policy node runs on the camera
topic; the env renders only the crop window (an off-axis frustum of the same camera: the
same pixels, measured 6 of 16384 differing by rasterisation at edges, about 4x cheaper).

Choices (documented in ``policies/ball_plate_pixels/MODEL_CARD.md``):

* frame skip 1: one camera frame per control step at 30 Hz (the ball moves at most ~1 px of
  the 64x64 image per frame at its start speeds);
* frame stack 2, stride 1: the ball's velocity is the difference of its positions in the two
  frames over one control period, as the state task's finite difference;
* image DR (``randomize=True``), per episode from the episode seed: light direction, colour
  and ambient/diffuse/specular coefficients; every body's colour scaled per channel by
  U(0.85, 1.15); camera pose jitter (position U(-1, 1) cm per axis, orientation U(-1, 1) deg
  per axis); Gaussian pixel noise of std U(0, 4) grey levels per step; plus the state task's
  dynamics DR (mass, friction, actuator delay, joint-angle noise).

Observation: ``{"image": (3 * STACK_DEPTH, 64, 64) uint8, "state": (2,) float32}`` (SB3's
image convention: channels first, uint8, divided by 255 inside the network). The privileged
6-vector of the state task (ball position and velocity from simulator truth, plate angles) is
kept in ``env.expert_obs`` for the teacher of the distillation (``rlstack_learning.pixels``),
never in the observation.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from rlstack_bundle.images import FrameStack, ImageSpec, preprocess, render_window

from .ball_plate import BallPlateEnv

STACK_DEPTH = 2
IMAGE = ImageSpec(
    name="overhead", topic="/overhead_camera/image_raw", encoding="rgb8", width=320, height=240,
    crop=(96, 56, 128, 128), resize=(64, 64), stack_depth=STACK_DEPTH, stack_stride=1, input="image",
    description="the bridge's overhead camera, cropped to the plate, 64x64, last 2 frames (oldest first)")


def _rot(rx: float, ry: float, rz: float) -> np.ndarray:
    cx, sx, cy, sy, cz, sz = math.cos(rx), math.sin(rx), math.cos(ry), math.sin(ry), math.cos(rz), math.sin(rz)
    return (np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]]) @ np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
            @ np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]]))


class BallPlatePixelsEnv(BallPlateEnv):
    task_name = "ball_plate_pixels"
    env_id = "RlStack/BallPlatePixels-v0"
    obs_terms = BallPlateEnv.obs_terms[4:]          # measured plate angles; the ball comes from the image
    image = IMAGE
    io_notes = (
        "the ball is seen, not told: image_observation 'overhead' is the bridge's /overhead_camera/image_raw "
        "(set camera_rate_hz to the control rate, 30 Hz, so every step has a new frame; in lockstep "
        "camera_in_lockstep: true)",
        "preprocess with rlstack_bundle.images.preprocess (crop, area resize, channels first) and stack with "
        "rlstack_bundle.images.FrameStack (by header stamp)",
    )

    def __init__(self, render_mode: Optional[str] = None, randomize: Any = False, **kwargs) -> None:
        super().__init__(render_mode=render_mode, randomize=randomize, **kwargs)
        spec = self.image
        self.observation_space = gym.spaces.Dict({
            "image": gym.spaces.Box(0, 255, shape=spec.input_shape, dtype=np.uint8),
            "state": gym.spaces.Box(-np.inf, np.inf, shape=(len(self.obs_terms),), dtype=np.float32),
        })
        self.frames = FrameStack(spec, 1.0 / self.control_rate_hz)
        self.expert_obs = np.zeros(6, np.float32)
        self._view_dr: Dict[str, Any] = {}
        self._nominal_rgba = self.sim.visual_colors()

    # ------------------------------------------------------------ rendering
    def _window_frame(self) -> np.ndarray:
        import dataclasses

        from sim_bridges.contract import Lighting, Pose
        from sim_bridges.geometry import quat_to_matrix

        spec, cs = self.image, self.sim.camera_spec(self.camera)
        pose = self.sim.camera_pose(self.camera)
        jit = self._view_dr.get("camera")
        if jit is not None:
            r = quat_to_matrix(pose.orientation) @ _rot(*jit[3:])
            q = _quat_from_matrix(r)
            pose = Pose(np.asarray(pose.position) + np.asarray(jit[:3]), q)
        t = math.tan(0.5 * cs.vfov_rad)
        window = render_window(spec, (t * cs.width / cs.height, t))
        light = self._view_dr.get("light")
        lighting = None if light is None else Lighting(
            direction=tuple(light["lightDirection"]), color=tuple(light["lightColor"]),
            ambient=light["lightAmbientCoeff"], diffuse=light["lightDiffuseCoeff"],
            specular=light["lightSpecularCoeff"])
        view = dataclasses.replace(cs, width=spec.crop[2], height=spec.crop[3])
        window_rgb = self.sim.render_view(view, pose, window=window, lighting=lighting).rgb
        frame = preprocess(np.asarray(window_rgb), spec, cropped=True)
        sigma = self._view_dr.get("pixel_noise", 0.0)
        if sigma > 0:
            frame = np.clip(frame + self._rng.normal(0.0, sigma, frame.shape), 0, 255).astype(np.uint8)
        return frame

    def _apply_view_randomization(self, rng: np.random.Generator) -> None:
        self._view_dr = {}
        if self.dr is None:
            return
        d = rng.normal(size=3)
        d[2] = abs(d[2]) + 0.5
        self._view_dr["light"] = {
            "lightDirection": list(d / np.linalg.norm(d) * 10.0),
            "lightColor": list(rng.uniform(0.8, 1.0, 3)),
            "lightAmbientCoeff": float(rng.uniform(0.4, 0.8)),
            "lightDiffuseCoeff": float(rng.uniform(0.2, 0.6)),
            "lightSpecularCoeff": float(rng.uniform(0.0, 0.3)),
        }
        self._view_dr["camera"] = list(rng.uniform(-0.01, 0.01, 3)) + list(np.radians(rng.uniform(-1, 1, 3)))
        self._view_dr["pixel_noise"] = float(rng.uniform(0.0, 4.0))
        colors = {}
        for key, nominal in self._nominal_rgba.items():
            rgba = np.array(nominal, dtype=float)   # absolute: a reset without a rebuild never compounds
            rgba[:3] = np.clip(rgba[:3] * rng.uniform(0.85, 1.15, 3), 0.0, 1.0)
            colors[key] = tuple(rgba)
        self.sim.set_visual_colors(colors)
        self.episode_dr["view"] = {"light": self._view_dr["light"],
                                   "camera": [round(v, 5) for v in self._view_dr["camera"]],
                                   "pixel_noise": round(self._view_dr["pixel_noise"], 3)}

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, info = super().reset(seed=seed, options=options)
        self._apply_view_randomization(np.random.default_rng([self.episode_seed, 0x1A6E]))
        info["randomization"] = dict(self.episode_dr)
        self.frames.fill(0.0, self._window_frame())
        return self._with_image(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.frames.push(self.steps / self.control_rate_hz, self._window_frame())
        return self._with_image(obs), reward, terminated, truncated, info

    def _observe(self, raw: np.ndarray) -> np.ndarray:
        self.expert_obs = np.asarray(raw, np.float32).copy()          # privileged: the teacher's input only
        state = np.asarray(raw[4:6], np.float64)
        if self.dr is not None and self.dr.obs_noise_scale > 0:
            state = state + self._rng.normal(0.0, 1.0, 2) * self._obs_noise * self.dr.obs_noise_scale
        return (state * self._obs_scale).astype(np.float32)

    def _with_image(self, state: np.ndarray) -> Dict[str, np.ndarray]:
        stack, why = self.frames.stack()
        if stack is None:  # pragma: no cover - one frame per step always stacks
            raise RuntimeError(why)
        return {"image": stack, "state": state}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        return np.asarray(self.sim.camera_frame(self.camera).rgb)

    @classmethod
    def io_descriptor(cls) -> Dict[str, Any]:
        from rlstack_bundle.terms import io_descriptor

        return io_descriptor(cls.task_name, cls.env_id, cls.control_rate_hz, cls.obs_terms, cls.act_terms,
                             cls.discrete, cls.io_notes, images=[cls.image])


def _quat_from_matrix(r: np.ndarray):
    """(x, y, z, w) of a rotation matrix."""
    w = math.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    x = math.sqrt(max(0.0, 1.0 + r[0, 0] - r[1, 1] - r[2, 2])) / 2
    y = math.sqrt(max(0.0, 1.0 - r[0, 0] + r[1, 1] - r[2, 2])) / 2
    z = math.sqrt(max(0.0, 1.0 - r[0, 0] - r[1, 1] + r[2, 2])) / 2
    x = math.copysign(x, r[2, 1] - r[1, 2])
    y = math.copysign(y, r[0, 2] - r[2, 0])
    z = math.copysign(z, r[1, 0] - r[0, 1])
    return (x, y, z, w)
