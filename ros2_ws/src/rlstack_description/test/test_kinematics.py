"""The kinematics core without ROS: URDF parsing, errors, joint transforms and the transform tree."""

import math

import pytest

from rlstack_description.kinematics import (
    TransformTree,
    UrdfError,
    compose,
    invert,
    parse_urdf,
    quat_from_rpy,
    quat_rotate,
    transforms_equal,
)

ARM = """<robot name="arm">
  <link name="base"/><link name="upper"/><link name="slider"/><link name="tip"/><link name="twin"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 1" rpy="0 0 1.5707963267948966"/><axis xyz="0 0 2"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="upper"/><child link="slider"/><origin xyz="1 0 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.5" effort="1" velocity="1"/>
  </joint>
  <joint name="tool" type="fixed"><parent link="slider"/><child link="tip"/><origin xyz="0 0 -0.1"/></joint>
  <joint name="twin_slide" type="prismatic">
    <parent link="upper"/><child link="twin"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.5" effort="1" velocity="1"/><mimic joint="slide" multiplier="-2" offset="0.1"/>
  </joint>
</robot>"""


def close(a, b, tol=1e-9):
    return all(abs(x - y) < tol for x, y in zip(a, b))


def test_parse_tree_and_forward_kinematics():
    m = parse_urdf(ARM)
    assert m.root == "base" and m.links == ("base", "upper", "slider", "tip", "twin")
    assert [j.name for j in m.fixed_joints] == ["tool"]
    assert m.joints["shoulder"].axis == (0.0, 0.0, 1.0)   # normalised
    poses = m.link_poses({"shoulder": math.pi / 2, "slide": 0.25})
    # origin yaw 90 deg + joint 90 deg: upper's x axis points along -x of base
    assert close(poses["slider"][0], (-1.25, 0.0, 1.0))
    assert close(poses["tip"][0], (-1.25, 0.0, 0.9))
    # mimic: twin = -2 * 0.25 + 0.1 = -0.4 along upper's y (= base -y)
    assert close(poses["twin"][0], (0.0, 0.4, 1.0))
    # joints missing from the positions sit at 0
    assert close(m.link_poses({})["slider"][0], (0.0, 1.0, 1.0))


def test_rpy_is_fixed_axis_roll_pitch_yaw():
    q = quat_from_rpy(0.3, -0.4, 1.1)
    rx = (math.sin(0.15), 0.0, 0.0, math.cos(0.15))
    ry = (0.0, math.sin(-0.2), 0.0, math.cos(-0.2))
    rz = (0.0, 0.0, math.sin(0.55), math.cos(0.55))
    zyx = compose(((0, 0, 0), rz), compose(((0, 0, 0), ry), ((0, 0, 0), rx)))[1]
    assert transforms_equal(((0, 0, 0), q), ((0, 0, 0), zyx))
    v = quat_rotate(quat_from_rpy(0, 0, math.pi / 2), (1.0, 0.0, 0.0))
    assert close(v, (0.0, 1.0, 0.0))


def test_transform_tree_lookup_and_reachability():
    m = parse_urdf(ARM)
    tree = TransformTree()
    values = {"shoulder": 0.3, "slide": 0.1}
    for j in m.joints.values():
        tree.set(j.parent, j.child, m.joint_transform(j, m.resolve_positions(values).get(j.name, 0.0)))
    poses = m.link_poses(values)
    assert transforms_equal(tree.lookup("base", "tip"), poses["tip"])
    assert transforms_equal(tree.lookup("tip", "base"), invert(poses["tip"]))
    tree.set("elsewhere", "island", ((0, 0, 0), (0, 0, 0, 1)))
    assert tree.reachable("base", ["tip", "twin", "island"]) == ["tip", "twin"]
    with pytest.raises(ValueError, match="not connected"):
        tree.lookup("base", "island")


@pytest.mark.parametrize("text, problem", [
    ("", "the URDF is empty"),
    ("<robot", "not well-formed XML"),
    ("<model/>", "the root element is <model>"),
    ('<robot name="r"/>', "the robot has no <link>"),
    ('<robot><link name="a"/><link name="a"/></robot>', "link 'a' is defined twice"),
    ('<robot><link name="a"/><link name="b"/><joint name="j" type="floating"><parent link="a"/>'
     '<child link="b"/></joint></robot>', "joint 'j' has type 'floating'"),
    ('<robot><link name="a"/><joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>',
     "joint 'j': child link 'b' is not a <link>"),
    ('<robot><link name="a"/><link name="b"/><joint name="j" type="continuous"><parent link="a"/>'
     '<child link="b"/><axis xyz="0 0 0"/></joint></robot>', "must not be zero"),
    ('<robot><link name="a"/><link name="b"/><joint name="j" type="fixed"><parent link="a"/>'
     '<child link="b"/><origin xyz="0 nan 0"/></joint></robot>', "origin xyz must be 3 finite numbers"),
    ('<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
     '<child link="b"/></joint></robot>', "a revolute joint needs a <limit>"),
    ('<robot><link name="a"/><link name="b"/></robot>', "one root; roots: a, b"),
    ('<robot><link name="a"/><link name="b"/><link name="c"/>'
     '<joint name="j1" type="fixed"><parent link="b"/><child link="c"/></joint>'
     '<joint name="j2" type="fixed"><parent link="c"/><child link="b"/></joint></robot>', "not connected"),
])
def test_bad_urdf_names_source_and_problem(text, problem):
    with pytest.raises(UrdfError) as info:
        parse_urdf(text, "robot.urdf")
    message = str(info.value)
    assert message.startswith("robot.urdf: ") and problem in message and "\n" not in message
