"""URDF kinematics without rclpy: the joint tree of a URDF and each joint's transform.

:func:`parse_urdf` reads the ``<link>`` and ``<joint>`` elements with ``xml.etree`` into a
:class:`RobotModel`; :meth:`RobotModel.joint_transform` gives a joint's parent -> child transform
for a joint value (origin ``xyz``/``rpy``, then the motion along ``axis``: a rotation for
revolute and continuous joints, a translation for prismatic ones, none for fixed ones).
:class:`TransformTree` composes parent -> child transforms into the transform between any two
frames of one tree, as a tf2 buffer does.

Transforms are ``(xyz, quaternion)`` pairs, quaternions ``(x, y, z, w)`` as in ROS messages.
A problem in the URDF raises :class:`UrdfError` whose message names the file and the problem.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from rlstack_bundle.frames import quat_mul as quat_multiply  # the one frame-math module
from rlstack_bundle.frames import quat_rotate

Vec = Tuple[float, float, float]
Quat = Tuple[float, float, float, float]
Transform = Tuple[Vec, Quat]

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
IDENTITY: Transform = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))


class UrdfError(ValueError):
    """A URDF that cannot be used: the message names the source and the problem."""


# ---------------------------------------------------------------------------------- transform math
def quat_from_rpy(roll: float, pitch: float, yaw: float) -> Quat:
    """URDF ``rpy``: fixed-axis roll about x, then pitch about y, then yaw about z."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def quat_from_axis_angle(axis: Vec, angle: float) -> Quat:
    s = math.sin(angle / 2)
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2))


def compose(a: Transform, b: Transform) -> Transform:
    """``a * b``: b expressed in a's parent frame."""
    rb = quat_rotate(a[1], b[0])
    return ((a[0][0] + rb[0], a[0][1] + rb[1], a[0][2] + rb[2]), quat_multiply(a[1], b[1]))


def invert(t: Transform) -> Transform:
    qi = (-t[1][0], -t[1][1], -t[1][2], t[1][3])
    p = quat_rotate(qi, t[0])
    return ((-p[0], -p[1], -p[2]), qi)


# ------------------------------------------------------------------------------------------ model
@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    xyz: Vec = (0.0, 0.0, 0.0)
    rpy: Vec = (0.0, 0.0, 0.0)
    axis: Vec = (1.0, 0.0, 0.0)
    lower: Optional[float] = None
    upper: Optional[float] = None
    effort: Optional[float] = None
    velocity: Optional[float] = None
    mimic: Optional[Tuple[str, float, float]] = None   # (joint, multiplier, offset)

    @property
    def moving(self) -> bool:
        return self.type != "fixed"

    @property
    def origin(self) -> Transform:
        return self.xyz, quat_from_rpy(*self.rpy)


@dataclass
class RobotModel:
    name: str
    links: Tuple[str, ...]
    joints: Dict[str, Joint]            # in file order
    root: str
    source: str = "<string>"
    _by_child: Dict[str, Joint] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_child = {j.child: j for j in self.joints.values()}

    @property
    def fixed_joints(self) -> List[Joint]:
        return [j for j in self.joints.values() if not j.moving]

    @property
    def moving_joints(self) -> List[Joint]:
        return [j for j in self.joints.values() if j.moving]

    def parent_joint(self, link: str) -> Optional[Joint]:
        return self._by_child.get(link)

    def joint_transform(self, joint: Joint | str, value: float = 0.0) -> Transform:
        """parent link -> child link of ``joint`` at joint value ``value`` (rad or m)."""
        j = self.joints[joint] if isinstance(joint, str) else joint
        origin = j.origin
        if j.type in ("revolute", "continuous"):
            return compose(origin, ((0.0, 0.0, 0.0), quat_from_axis_angle(j.axis, value)))
        if j.type == "prismatic":
            return compose(origin, ((j.axis[0] * value, j.axis[1] * value, j.axis[2] * value),
                                    (0.0, 0.0, 0.0, 1.0)))
        return origin

    def resolve_positions(self, positions: Mapping[str, float]) -> Dict[str, float]:
        """Values of the moving joints given ``positions``: mimic joints follow the joint they mimic."""
        out = {n: float(v) for n, v in positions.items() if n in self.joints and self.joints[n].moving
               and self.joints[n].mimic is None}
        for j in self.moving_joints:
            if j.mimic is not None and j.mimic[0] in out:
                out[j.name] = j.mimic[1] * out[j.mimic[0]] + j.mimic[2]
        return out

    def link_poses(self, positions: Mapping[str, float], default: float = 0.0) -> Dict[str, Transform]:
        """Pose of every link in the root link's frame (moving joints missing from ``positions``: ``default``)."""
        values = self.resolve_positions(positions)
        poses: Dict[str, Transform] = {self.root: IDENTITY}

        def pose(link: str) -> Transform:
            if link not in poses:
                j = self._by_child[link]
                poses[link] = compose(pose(j.parent), self.joint_transform(j, values.get(j.name, default)))
            return poses[link]

        for link in self.links:
            pose(link)
        return poses


# ---------------------------------------------------------------------------------------- parsing
def _floats(text: Optional[str], n: int, what: str, fail) -> Tuple[float, ...]:
    if text is None:
        return (0.0,) * n
    parts = text.split()
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != n or not all(math.isfinite(v) for v in values):
        fail(f"{what} must be {n} finite numbers, got {text!r}")
    return values


def _opt_float(elem: Optional[ET.Element], attr: str, what: str, fail) -> Optional[float]:
    if elem is None or elem.get(attr) is None:
        return None
    try:
        value = float(elem.get(attr))
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        fail(f"{what} {attr}={elem.get(attr)!r} is not a finite number")
    return value


def parse_urdf(text: str, source: str = "<string>") -> RobotModel:
    """Parse URDF text into a :class:`RobotModel`; ``source`` names it in errors (a path or a parameter)."""

    def fail(problem: str):
        raise UrdfError(f"{source}: {problem}")

    if not isinstance(text, str) or not text.strip():
        fail("the URDF is empty")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        fail(f"not well-formed XML ({e})")
    if root.tag != "robot":
        fail(f"the root element is <{root.tag}>, not <robot>")
    links: List[str] = []
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            fail("a <link> has no name")
        if name in links:
            fail(f"link '{name}' is defined twice")
        links.append(name)
    if not links:
        fail("the robot has no <link>")
    known = set(links)
    joints: Dict[str, Joint] = {}
    children: Dict[str, str] = {}
    for elem in root.findall("joint"):
        name = elem.get("name")
        if not name:
            fail("a <joint> has no name")
        where = f"joint '{name}'"
        if name in joints:
            fail(f"{where} is defined twice")
        jtype = elem.get("type")
        if jtype not in JOINT_TYPES:
            fail(f"{where} has type {jtype!r}; supported: {', '.join(JOINT_TYPES)}")
        parent_el, child_el = elem.find("parent"), elem.find("child")
        parent = parent_el.get("link") if parent_el is not None else None
        child = child_el.get("link") if child_el is not None else None
        if not parent or not child:
            fail(f"{where} needs <parent link=...> and <child link=...>")
        for role, link in (("parent", parent), ("child", child)):
            if link not in known:
                fail(f"{where}: {role} link '{link}' is not a <link> of the robot")
        if parent == child:
            fail(f"{where}: parent and child are the same link '{parent}'")
        if child in children:
            fail(f"link '{child}' is the child of two joints ('{children[child]}' and '{name}')")
        children[child] = name
        origin = elem.find("origin")
        xyz = _floats(origin.get("xyz") if origin is not None else None, 3, f"{where} origin xyz", fail)
        rpy = _floats(origin.get("rpy") if origin is not None else None, 3, f"{where} origin rpy", fail)
        axis: Vec = (1.0, 0.0, 0.0)
        axis_el = elem.find("axis")
        if jtype != "fixed":
            if axis_el is not None and axis_el.get("xyz") is not None:
                axis = _floats(axis_el.get("xyz"), 3, f"{where} axis xyz", fail)
            norm = math.sqrt(sum(a * a for a in axis))
            if norm < 1e-9:
                fail(f"{where}: the axis of a {jtype} joint must not be zero")
            axis = tuple(a / norm for a in axis)
        limit = elem.find("limit")
        lower = _opt_float(limit, "lower", f"{where} limit", fail)
        upper = _opt_float(limit, "upper", f"{where} limit", fail)
        if jtype in ("revolute", "prismatic") and limit is None:
            fail(f"{where}: a {jtype} joint needs a <limit>")
        mimic = None
        mimic_el = elem.find("mimic")
        if mimic_el is not None:
            if not mimic_el.get("joint"):
                fail(f"{where}: <mimic> has no joint")
            mult = _opt_float(mimic_el, "multiplier", f"{where} mimic", fail)
            offs = _opt_float(mimic_el, "offset", f"{where} mimic", fail)
            mimic = (mimic_el.get("joint"), 1.0 if mult is None else mult, 0.0 if offs is None else offs)
        joints[name] = Joint(name, jtype, parent, child, xyz, rpy, axis, lower, upper,
                             _opt_float(limit, "effort", f"{where} limit", fail),
                             _opt_float(limit, "velocity", f"{where} limit", fail), mimic)
    for j in joints.values():
        if j.mimic is not None:
            target = joints.get(j.mimic[0])
            if target is None or not target.moving or target.mimic is not None:
                fail(f"joint '{j.name}' mimics '{j.mimic[0]}', which is not a moving joint without a mimic")
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        fail(f"the links must form one tree with one root; roots: {', '.join(roots) or 'none (a cycle)'}")
    # every link reachable from the root (a cycle would leave links unreached)
    by_parent: Dict[str, List[str]] = {}
    for j in joints.values():
        by_parent.setdefault(j.parent, []).append(j.child)
    seen, todo = set(), [roots[0]]
    while todo:
        link = todo.pop()
        seen.add(link)
        todo += [c for c in by_parent.get(link, []) if c not in seen]
    if seen != known:
        fail(f"links not connected to the root '{roots[0]}' (a cycle): {', '.join(sorted(known - seen))}")
    return RobotModel(root.get("name") or "", tuple(links), joints, roots[0], source)


def load_urdf(path: str) -> RobotModel:
    """Read and parse the URDF file at ``path``."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UrdfError(f"{path}: cannot read the URDF ({e.strerror or e})") from None
    return parse_urdf(text, path)


# ---------------------------------------------------------------------------------- transform tree
class TransformTree:
    """The latest parent -> child transform of every child frame, composed between any two frames."""

    def __init__(self) -> None:
        self.parent: Dict[str, Tuple[str, Transform]] = {}

    def set(self, parent: str, child: str, transform: Transform) -> None:
        self.parent[child] = (parent, transform)

    def frames(self) -> set:
        return set(self.parent) | {p for p, _ in self.parent.values()}

    def _to_root(self, frame: str) -> Tuple[str, Transform, List[str]]:
        t, chain = IDENTITY, [frame]
        while frame in self.parent:
            parent, tf = self.parent[frame]
            t = compose(tf, t)
            frame = parent
            if frame in chain:
                raise ValueError(f"the transforms form a cycle through '{frame}'")
            chain.append(frame)
        return frame, t, chain

    def lookup(self, target: str, source: str) -> Transform:
        """Pose of ``source`` in ``target`` (tf2's lookupTransform(target, source)); ValueError if unconnected."""
        root_t, t_target, _ = self._to_root(target)
        root_s, t_source, _ = self._to_root(source)
        if root_t != root_s:
            raise ValueError(f"'{source}' and '{target}' are not connected ('{root_s}' vs '{root_t}')")
        return compose(invert(t_target), t_source)

    def reachable(self, frame: str, others: Iterable[str]) -> List[str]:
        """Those of ``others`` connected to ``frame``."""
        root = self._to_root(frame)[0]
        return [o for o in others if self._to_root(o)[0] == root]


def transforms_equal(a: Transform, b: Transform, tol: float = 1e-6) -> bool:
    """Same translation and rotation (q and -q are the same rotation)."""
    if any(abs(x - y) > tol for x, y in zip(a[0], b[0])):
        return False
    dot = abs(sum(x * y for x, y in zip(a[1], b[1])))
    return dot > 1.0 - tol


def tree_summary(model: RobotModel) -> List[Tuple]:
    """The kinematic tree as comparable rows: (joint, type, parent, child, xyz, rpy, axis, lower, upper)."""
    r = lambda v: tuple(round(x, 9) + 0.0 for x in v)  # noqa: E731 (+0.0: no -0.0)
    return sorted((j.name, j.type, j.parent, j.child, r(j.xyz), r(j.rpy), r(j.axis) if j.moving else None,
                   j.lower, j.upper) for j in model.joints.values())


__all__: Sequence[str] = (
    "UrdfError", "Joint", "RobotModel", "parse_urdf", "load_urdf", "TransformTree", "compose", "invert",
    "quat_from_rpy", "quat_from_axis_angle", "quat_multiply", "quat_rotate", "transforms_equal", "tree_summary",
    "IDENTITY", "JOINT_TYPES",
)
