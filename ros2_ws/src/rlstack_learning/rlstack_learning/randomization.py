"""Domain randomisation: masses, friction, actuator delay, observation noise.

Every task accepts ``randomize=`` (``False``, ``True`` for the task's defaults, or a dict of
:class:`DomainRandomization` fields). Per episode, from the episode seed only:

* every dynamic link's mass is scaled by ``U(mass_scale)`` (one factor per body),
* every link's lateral friction by ``U(friction_scale)`` (one factor per body),
* the action is applied ``d ~ U{action_delay_steps}`` control steps late,
* each observation term gets Gaussian noise of ``obs_noise_scale * term.noise_std`` per step.

Masses and friction need simulator access that the ``sim_bridges`` contract does not offer
(yet): :class:`PyBulletDynamics` uses the backend's public ``client_id``, :class:`MuJoCoDynamics`
the MuJoCo backend's public ``model``/``data``. Other backends raise ``NotSupported`` when
mass/friction randomisation is asked for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np


@dataclass(frozen=True)
class DomainRandomization:
    mass_scale: Tuple[float, float] = (1.0, 1.0)
    friction_scale: Tuple[float, float] = (1.0, 1.0)
    action_delay_steps: Tuple[int, int] = (0, 0)
    obs_noise_scale: float = 0.0

    def __post_init__(self) -> None:
        for name in ("mass_scale", "friction_scale", "action_delay_steps"):
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list)) and len(v) == 2 and 0 <= v[0] <= v[1]):
                raise ValueError(f"domain randomisation '{name}' must be [low, high] with 0 <= low <= high, got {v!r}")
            object.__setattr__(self, name, tuple(v))
        if self.mass_scale[0] <= 0:
            raise ValueError(f"domain randomisation 'mass_scale' must be positive, got {self.mass_scale}")
        if any(int(x) != x for x in self.action_delay_steps):
            raise ValueError(f"domain randomisation 'action_delay_steps' must be integers, got {self.action_delay_steps}")
        if not self.obs_noise_scale >= 0:
            raise ValueError(f"domain randomisation 'obs_noise_scale' must be >= 0, got {self.obs_noise_scale}")

    @property
    def changes_dynamics(self) -> bool:
        return self.mass_scale != (1.0, 1.0) or self.friction_scale != (1.0, 1.0)

    @classmethod
    def make(cls, spec: Union[bool, None, Mapping[str, Any], "DomainRandomization"],
             defaults: "DomainRandomization") -> Optional["DomainRandomization"]:
        """``False``/``None`` -> off; ``True`` -> task defaults; dict -> defaults updated by it."""
        if spec is None or spec is False:
            return None
        if spec is True:
            return defaults
        if isinstance(spec, cls):
            return spec
        if isinstance(spec, Mapping):
            known = {f.name for f in dataclasses.fields(cls)}
            bad = sorted(set(spec) - known)
            if bad:
                raise ValueError(f"unknown domain randomisation field(s) {bad}; known: {sorted(known)}")
            return dataclasses.replace(defaults, **dict(spec))
        raise ValueError(f"randomize must be a bool or a mapping, got {type(spec).__name__}")

    def to_dict(self) -> Dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


class PyBulletDynamics:
    """Mass and friction of every body in a PyBullet backend, with the nominal values kept."""

    def __init__(self, sim: Any) -> None:
        import pybullet as p  # local: only this backend needs it

        self._p = p
        self._cid = sim.client_id
        self._nominal: List[Tuple[int, int, float, float]] = []  # body, link, mass, friction
        for i in range(p.getNumBodies(physicsClientId=self._cid)):
            body = p.getBodyUniqueId(i, physicsClientId=self._cid)
            for link in range(-1, p.getNumJoints(body, physicsClientId=self._cid)):
                info = p.getDynamicsInfo(body, link, physicsClientId=self._cid)
                self._nominal.append((body, link, float(info[0]), float(info[1])))

    def body_named(self, name: str) -> int:
        """Body id whose URDF robot name (or base link name) is ``name``."""
        p = self._p
        for i in range(p.getNumBodies(physicsClientId=self._cid)):
            body = p.getBodyUniqueId(i, physicsClientId=self._cid)
            base, robot = p.getBodyInfo(body, physicsClientId=self._cid)
            if name in (base.decode(), robot.decode()):
                return body
        raise KeyError(f"no body named '{name}'")

    def apply(self, mass_factor: Dict[int, float], friction_factor: Dict[int, float]) -> None:
        """Set mass/friction to nominal * factor (absolute: repeated calls never compound)."""
        p, cid = self._p, self._cid
        for body, link, mass, friction in self._nominal:
            kw = {"lateralFriction": friction * friction_factor.get(body, 1.0)}
            if mass > 0:  # static links stay static
                kw["mass"] = mass * mass_factor.get(body, 1.0)
            p.changeDynamics(body, link, physicsClientId=cid, **kw)

    @property
    def bodies(self) -> List[int]:
        return sorted({b for b, *_ in self._nominal})

    def set_base_velocity(self, body: int, linear: Any, angular: Any = (0.0, 0.0, 0.0)) -> None:
        self._p.resetBaseVelocity(body, list(map(float, linear)), list(map(float, angular)),
                                  physicsClientId=self._cid)

    def link_position(self, body: int, link_name: str) -> "np.ndarray":
        """World position of a link frame (the contract has no end-effector pose query yet)."""
        p, cid = self._p, self._cid
        for j in range(p.getNumJoints(body, physicsClientId=cid)):
            if p.getJointInfo(body, j, physicsClientId=cid)[12].decode() == link_name:
                return np.array(p.getLinkState(body, j, computeForwardKinematics=1, physicsClientId=cid)[4])
        raise KeyError(f"no link named '{link_name}'")


class MuJoCoDynamics:
    """:class:`PyBulletDynamics`' interface on the MuJoCo backend (its public ``model``/``data``).

    A "body" here is what PyBullet calls one: the robot (all its links) or one free object;
    a factor applies to every MuJoCo body of the group (mass) and every geom of it (sliding
    friction). As in PyBullet, masses change and inertias stay (same DR semantics on both).
    """

    def __init__(self, sim: Any) -> None:
        import mujoco  # local: only this backend needs it
        import xml.etree.ElementTree as ET

        self._mj = mujoco
        self._sim = sim
        model = sim.model
        self._groups: Dict[int, List[int]] = {}
        self._names: Dict[str, int] = {}
        objects = {name: obj for name, obj in sim._objects.items()}
        robot_bodies = []
        for b in range(1, model.nbody):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
            if name in objects:
                gid = len(self._groups) + 1
                self._groups[gid] = [b]
                self._names[name] = gid
                urdf = objects[name].spec.urdf_path
                if urdf:  # the object's URDF robot name (as PyBullet's body_named sees it)
                    self._names[ET.parse(urdf).getroot().get("name")] = gid
            elif not name.startswith("static_"):
                robot_bodies.append(b)
        if robot_bodies:
            self._groups[0] = robot_bodies
            for robot, _, _ in sim._robots:
                self._names[robot.name] = 0
        self._mass0 = model.body_mass.copy()
        self._scratch = mujoco.MjData(model)
        self._friction0 = model.geom_friction[:, 0].copy()

    def body_named(self, name: str) -> int:
        if name not in self._names:
            raise KeyError(f"no body named '{name}'")
        return self._names[name]

    def apply(self, mass_factor: Dict[int, float], friction_factor: Dict[int, float]) -> None:
        """Set mass/friction to nominal * factor (absolute: repeated calls never compound)."""
        model = self._sim.model
        for gid, bodies in self._groups.items():
            for b in bodies:
                if self._mass0[b] > 0:
                    model.body_mass[b] = self._mass0[b] * mass_factor.get(gid, 1.0)
                for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b]):
                    model.geom_friction[g, 0] = self._friction0[g] * friction_factor.get(gid, 1.0)
        # MuJoCo derives constants from the masses (body_subtreemass, and the inverse weights that
        # scale every constraint's softness): recompute them, or a cube made 30 % lighter keeps
        # the contact impedance of the nominal one and a firm grasp can blow up. On scratch data:
        # mj_setConst moves the state it is given to qpos0.
        self._mj.mj_setConst(model, self._scratch)

    @property
    def bodies(self) -> List[int]:
        return sorted(self._groups)

    def set_base_velocity(self, body: int, linear: Any, angular: Any = (0.0, 0.0, 0.0)) -> None:
        """World-frame velocity of a free object (MuJoCo's free joint takes angular velocity in the body frame)."""
        model, data = self._sim.model, self._sim.data
        (b,) = self._groups[body]
        dof = int(model.jnt_dofadr[model.body_jntadr[b]])
        r = data.xmat[b].reshape(3, 3)
        data.qvel[dof:dof + 3] = np.asarray(linear, dtype=float)
        data.qvel[dof + 3:dof + 6] = r.T @ np.asarray(angular, dtype=float)
        self._mj.mj_forward(model, data)

    def link_position(self, body: int, link_name: str) -> "np.ndarray":
        """World position of a link frame (a URDF link is a MuJoCo body of the same name)."""
        sim = self._sim
        b = self._mj.mj_name2id(sim.model, self._mj.mjtObj.mjOBJ_BODY, link_name)
        if b < 0 or self._groups.get(body) is None or b not in self._groups[body]:
            raise KeyError(f"no link named '{link_name}'")
        sim._sync()
        return sim.data.xpos[b].copy()
