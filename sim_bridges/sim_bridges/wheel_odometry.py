"""Wheel odometry with a robot's errors, integrated from the wheel angles (pure numpy, no rclpy).

A simulator knows the true base pose; a robot only counts wheel turns. :class:`WheelOdometry`
turns the wheel joint angles that the backend reports into the odometry a differential-drive robot
would compute, with the usual errors of a real base:

* **systematic** (the same every run): the wheel radii the robot *believes* differ from the true
  ones (``left_radius_scale``, ``right_radius_scale``: a shared scale error makes every distance
  wrong by that share, a left/right mismatch makes straight lines curve), and the believed track
  width differs from the effective one (``track_scale``: every turn is mis-measured by that share);
* **random** (slip, bumps, encoder quantisation): a random walk whose variance grows with the
  distance driven and the angle turned, the structure of the odometry motion model of
  Thrun, Burgard and Fox, *Probabilistic Robotics* (2005), ch. 5.4:
  ``sigma_s^2 = slip_xx^2 |ds|`` on the distance, ``sigma_th^2 = slip_thth^2 |dth| + slip_ths^2 |ds|``
  on the heading;
* a small **yaw-rate bias** while the base moves (``yaw_bias``, rad/s; a gyro-less base that
  turns slightly under a straight command, or a miscalibrated fused gyro).

With ``gyro`` the heading comes from a simulated yaw-rate gyro instead of the wheels' difference,
as on most real bases (a gyro fused into the wheel odometry): the base's true turn between two
updates, plus white noise (``gyro_noise``, rad/sqrt(s)) and the ``yaw_bias`` while the wheels turn
(a bias estimated at rest, as a robot's driver does). Why: a base that turns with its wheels
standing still (it slides, e.g. under the arm's swing) is seen by a gyro and not by wheel angles;
the distance still comes from the wheels.

Default figures (per metre driven and per radian turned) and where they come from are listed in
:data:`DEFAULT_ERROR_FIGURES` and in docs/reference/localization.md. The covariance of the integrated pose is
propagated with the motion model's Jacobians, so ``/odom`` carries a covariance that grows as
a real one does.

With ``OdometryErrors.exact()`` (every error zero, no noise) the module integrates the wheel angles
without error; the bridge does not use it at all when wheel odometry is off, and publishes the
simulator's true pose, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Optional, Sequence, Tuple

import numpy as np

__all__ = ["OdometryErrors", "WheelOdometry", "DEFAULT_ERROR_FIGURES", "error_figures"]


@dataclass(frozen=True)
class OdometryErrors:
    """Odometry error parameters (SI units). Defaults: an uncalibrated small indoor base."""

    left_radius_scale: float = 1.004    # believed / true left wheel radius
    right_radius_scale: float = 0.998   # believed / true right wheel radius
    track_scale: float = 1.02           # believed / effective track width
    slip_xx: float = 0.01               # m / sqrt(m): distance noise std after 1 m driven
    slip_thth: float = 0.02             # rad / sqrt(rad): heading noise std after 1 rad turned
    slip_ths: float = 0.005             # rad / sqrt(m): heading noise std after 1 m driven
    yaw_bias: float = 0.002             # rad/s, added to the yaw rate while the wheels turn
    moving_threshold: float = 1e-3      # m/s (wheel surface speed): below this the base counts as still
    gyro: bool = False                  # heading from a yaw-rate gyro (update's true_yaw) instead of the wheels
    gyro_noise: float = 1e-4            # rad / sqrt(s): the gyro's angle random walk (0.34 deg/sqrt(h))

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise ValueError(f"OdometryErrors.{f.name} must be a finite number, got {value!r}")
        for name in ("left_radius_scale", "right_radius_scale", "track_scale"):
            if not 0.5 <= getattr(self, name) <= 1.5:
                raise ValueError(f"OdometryErrors.{name} is a scale in [0.5, 1.5], got {getattr(self, name)!r}")
        for name in ("slip_xx", "slip_thth", "slip_ths", "moving_threshold", "gyro_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"OdometryErrors.{name} must be >= 0, got {getattr(self, name)!r}")

    @staticmethod
    def exact() -> "OdometryErrors":
        """No error at all: the integrated wheel angles, nothing else."""
        return OdometryErrors(1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0)

    def with_(self, **changes) -> "OdometryErrors":
        return replace(self, **changes)


def error_figures(errors: OdometryErrors, track_width: float, speed: float = 0.3) -> dict:
    """The errors as a reader wants them: per metre driven straight and per radian turned in place.

    * ``heading_deg_per_m``: systematic heading drift from the radius mismatch, plus the yaw bias
      at ``speed`` m/s (1/speed seconds per metre);
    * ``distance_pct``: systematic distance error (mean radius scale), percent;
    * ``distance_noise_cm_per_sqrt_m``, ``heading_noise_deg_per_sqrt_m``: random walk, 1 sigma;
    * ``turn_pct``: systematic error of a turn in place (radius mean / track scale), percent;
    * ``turn_noise_deg_per_sqrt_rad``: random walk of a turn, 1 sigma.
    """
    rl, rr, tr = errors.left_radius_scale, errors.right_radius_scale, errors.track_scale
    heading_sys = (rr - rl) / (track_width * tr)          # rad per metre of true distance
    heading_bias = errors.yaw_bias / max(speed, 1e-9)      # rad per metre at this speed
    return {
        "heading_deg_per_m": math.degrees(heading_sys + heading_bias),
        "distance_pct": 100.0 * (0.5 * (rl + rr) - 1.0),
        "distance_noise_cm_per_sqrt_m": 100.0 * errors.slip_xx,
        "heading_noise_deg_per_sqrt_m": math.degrees(errors.slip_ths),
        "turn_pct": 100.0 * (0.5 * (rl + rr) / tr - 1.0),
        "turn_noise_deg_per_sqrt_rad": math.degrees(errors.slip_thth),
    }


#: Where the defaults come from. Systematic errors: UMBmark (Borenstein and Feng, "Measurement and
#: correction of systematic odometry errors in mobile robots", IEEE T-RA 12(6), 1996) names the two
#: dominant ones, unequal wheel diameters and an uncertain effective wheelbase; before calibration
#: they are of the order of tenths of a percent and a few percent; ours are 0.6 % mismatch and
#: 2 % track. Random errors: the odometry motion model (Probabilistic Robotics, ch. 5.4) with
#: 1 cm/sqrt(m) and 1.1 deg/sqrt(rad), the order of the alpha1..alpha4 defaults of ROS AMCL
#: (0.2 each, i.e. ~0.45 sqrt of variance per unit) divided by ~20-40 for an indoor base on a
#: hard floor: AMCL's defaults are deliberately pessimistic. The yaw bias (0.002 rad/s, 0.11 deg/s)
#: is that of an uncalibrated MEMS gyro. These are chosen figures, not measurements of a robot.
DEFAULT_ERROR_FIGURES = error_figures(OdometryErrors(), track_width=0.42)


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


class WheelOdometry:
    """Dead reckoning from the wheel angles of a differential-drive base.

    ``update(left_angle, right_angle, t, true_yaw)`` takes the wheels' joint angles (rad, continuous,
    as the backend reports them), the time (s) and, with ``errors.gyro``, the base's true yaw (rad,
    what the simulated gyro integrates), and returns ``(x, y, yaw)`` in ``odom``.
    The first call after :meth:`reset` only records the angles.
    """

    def __init__(self, wheel_radius: float, track_width: float, errors: OdometryErrors = OdometryErrors(),
                 seed: int = 0) -> None:
        if not (math.isfinite(wheel_radius) and wheel_radius > 0 and math.isfinite(track_width) and track_width > 0):
            raise ValueError(f"wheel_radius and track_width must be positive, got {wheel_radius}, {track_width}")
        self.wheel_radius = float(wheel_radius)
        self.track_width = float(track_width)
        self.errors = errors
        self._seed = seed
        self.reset()

    def reset(self, pose: Tuple[float, float, float] = (0.0, 0.0, 0.0), seed: Optional[int] = None) -> None:
        """Restart at ``pose`` (x, y, yaw in odom) with zero covariance and a fresh noise stream."""
        if seed is not None:
            self._seed = seed
        self.rng = np.random.default_rng([int(self._seed), 0x0D0])
        self.x, self.y, self.yaw = (float(v) for v in pose)
        self.cov = np.zeros((3, 3))
        self.v = 0.0
        self.w = 0.0
        self.distance = 0.0      # m driven (|ds| summed)
        self.turned = 0.0        # rad turned (|dth| summed)
        self._angles: Optional[Tuple[float, float]] = None
        self._t: Optional[float] = None
        self._true_yaw: Optional[float] = None

    @property
    def pose(self) -> Tuple[float, float, float]:
        return self.x, self.y, self.yaw

    def update(self, left_angle: float, right_angle: float, t: float,
               true_yaw: Optional[float] = None) -> Tuple[float, float, float]:
        left_angle, right_angle, t = float(left_angle), float(right_angle), float(t)
        if not all(math.isfinite(v) for v in (left_angle, right_angle, t)):
            raise ValueError(f"wheel angles and time must be finite, got {left_angle}, {right_angle}, {t}")
        if self.errors.gyro and (true_yaw is None or not math.isfinite(true_yaw)):
            raise ValueError(f"odometry with a gyro needs the base's true yaw, got {true_yaw!r}")
        gyro_turn = None
        if self.errors.gyro:
            if self._true_yaw is not None:
                gyro_turn = _wrap(float(true_yaw) - self._true_yaw)
            self._true_yaw = float(true_yaw)
        if self._angles is None or self._t is None or t < self._t:
            self._angles, self._t = (left_angle, right_angle), t
            self.v = self.w = 0.0
            return self.pose
        dt = t - self._t
        e = self.errors
        dl = (left_angle - self._angles[0]) * self.wheel_radius * e.left_radius_scale
        dr = (right_angle - self._angles[1]) * self.wheel_radius * e.right_radius_scale
        self._angles, self._t = (left_angle, right_angle), t
        ds = 0.5 * (dl + dr)
        moving = dt > 0 and max(abs(dl), abs(dr)) > e.moving_threshold * dt
        var_s = e.slip_xx ** 2 * abs(ds)
        if gyro_turn is not None:   # the gyro: the true turn, its noise, its bias while moving
            dth = gyro_turn + (e.yaw_bias * dt if moving else 0.0)
            var_th = e.gyro_noise ** 2 * max(dt, 0.0)
        else:
            dth = (dr - dl) / (self.track_width * e.track_scale)
            if moving:
                dth += e.yaw_bias * dt
            var_th = e.slip_thth ** 2 * abs(dth) + e.slip_ths ** 2 * abs(ds)
        if var_s > 0:
            ds += math.sqrt(var_s) * float(self.rng.standard_normal())
        if var_th > 0:
            dth += math.sqrt(var_th) * float(self.rng.standard_normal())
        # integrate along the arc's mid heading; Jacobian-propagate the covariance
        mid = self.yaw + 0.5 * dth
        c, s = math.cos(mid), math.sin(mid)
        f = np.array([[1.0, 0.0, -ds * s], [0.0, 1.0, ds * c], [0.0, 0.0, 1.0]])
        g = np.array([[c, -0.5 * ds * s], [s, 0.5 * ds * c], [0.0, 1.0]])
        self.cov = f @ self.cov @ f.T + g @ np.diag([var_s, var_th]) @ g.T
        self.x += ds * c
        self.y += ds * s
        self.yaw = _wrap(self.yaw + dth)
        self.distance += abs(ds)
        self.turned += abs(dth)
        if dt > 0:
            self.v, self.w = ds / dt, dth / dt
        return self.pose

    def covariance6(self, floor: Sequence[float] = (1e-6, 1e-6, 1e-6)) -> np.ndarray:
        """The 6x6 row-major covariance of ``nav_msgs/Odometry`` (x, y, z, roll, pitch, yaw); z, roll
        and pitch are fixed by the floor (tiny variance), x/y/yaw get at least ``floor``."""
        out = np.zeros((6, 6))
        idx = [0, 1, 5]
        for i, a in enumerate(idx):
            for j, b in enumerate(idx):
                out[a, b] = self.cov[i, j]
        for k, a in enumerate(idx):
            out[a, a] = max(out[a, a], floor[k])
        for a in (2, 3, 4):
            out[a, a] = 1e-9
        return out
