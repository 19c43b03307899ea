"""Run fetches on a live fetch graph and judge them from the simulator's ground truth.

Shared by the demo (tools/demo.py), the evaluation (:mod:`rlstack_mission.evaluate`) and the system
tests. It owns no robot logic: it sets the simulator up for a layout, clears the semantic map, sends
one ``/fetch`` goal and measures, from ground truth, where the target ended up and how far the base
drove.

Simulator calls (docs/reference/simulation-interfaces.md, "Clients of the simulator"): the seeded
layout comes from the bridge's ``/sim_bridge/reset`` with a seed, our extension (``ResetSim``: the
standard's ResetSimulation takes no seed); objects are placed with the ROS 2 standard's
``SetEntityState`` (``/sim_bridge/set_entity_state``), one call per object, inside a standard
pause (``SetSimulationState``) so that no step runs between the reset and the placement.
"""

from __future__ import annotations

import bisect
import collections
import math
import statistics
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .frames import yaw_of
from .layouts import FetchLayout, make_layout
from .send_fetch import send_fetch

#: the fetch graph's simulator bridge: its own services (``~/reset``) and the ROS 2 standard ones
#: (``simulation_interfaces``; bridge parameter ``simulation_interfaces_prefix`` ``~``) under its name
SIM_BRIDGE = "/sim_bridge"
#: navigation's injected obstacles; an empty message clears every sensed one
NAV_OBSTACLES = "/nav_controller/obstacles"
NAV_OBSTACLE_GRID = "/nav_controller/obstacle_grid"

#: (object name, position x y z, quaternion x y z w) in the simulator's world frame
Placement = Tuple[str, Tuple[float, float, float], Tuple[float, float, float, float]]


def layout_placements(layout: FetchLayout) -> List[Placement]:
    """What a layout places after its seeded reset: the target at its layout pose (x, y, z and the
    yaw as a quaternion about z), in the simulator's world frame."""
    x, y, z = (float(v) for v in layout.target_pose[:3])
    return [(layout.target, (x, y, z), tuple(float(v) for v in layout.quaternion()))]


def check_placements(placements: List[Placement]) -> str:
    """Why the placements cannot all be made ('' when they can): a name given twice, a non-finite
    pose, or an orientation that is not a unit quaternion (within 1e-3, the bridge's own rule).
    Checked before the first is sent: the standard places one entity per call, and a refusal found
    here moves nothing (as the extension's all-or-nothing ``~/move_objects`` did). An unknown name
    is the simulator's to refuse (``RESULT_NOT_FOUND``)."""
    seen = set()
    for name, position, quaternion in placements:
        if name in seen:
            return f"object '{name}' is placed twice"
        seen.add(name)
        if len(position) != 3 or len(quaternion) != 4:
            return f"pose of '{name}' is not a position (x, y, z) and a quaternion (x, y, z, w)"
        values = [float(v) for v in (*position, *quaternion)]
        if not all(math.isfinite(v) for v in values):
            return f"pose of '{name}' is not finite: {values}"
        if abs(math.sqrt(sum(float(v) ** 2 for v in quaternion)) - 1.0) > 1e-3:
            return f"orientation of '{name}' is not a unit quaternion: {list(quaternion)}"
    return ""


def entity_state_request(name: str, position, quaternion):
    """The standard ``SetEntityState`` request that places ``name`` at rest: the pose (in the
    simulator's world frame: an empty ``frame_id``) and a zero twist (``set_twist``: a simulator that
    keeps an entity's velocity on a pose change still stops it; our bridge places objects at rest
    either way and accepts a zero twist). The acceleration is not set."""
    from simulation_interfaces.srv import SetEntityState

    req = SetEntityState.Request(entity=name, set_pose=True, set_twist=True, set_acceleration=False)
    req.state.header.frame_id = ""
    p, q = req.state.pose.position, req.state.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.x, q.y, q.z, q.w = (float(v) for v in quaternion)
    return req


#: a fetch succeeds when the mission says so and the object rests on the floor this close to the drop-off
DROPOFF_TOLERANCE = 0.35


def on_dropoff(position: Tuple[float, float, float], dropoff: Tuple[float, ...]) -> bool:
    """An object at ``position`` (x, y, z) rests at the drop-off: on the floor (centre below 0.15 m)
    within DROPOFF_TOLERANCE of it. A missing object (NaN) is not."""
    x, y, z = position
    return math.hypot(x - dropoff[0], y - dropoff[1]) <= DROPOFF_TOLERANCE and z < 0.15


#: heights (m) of the fetched object's centre: carried above CARRIED_Z, lying on the floor below FLOOR_Z
CARRIED_Z, FLOOR_Z = 0.3, 0.1


def fall_before_drop(track: List[Tuple[float, ...]], phases: List[Tuple[float, str, str]]) -> Optional[Dict]:
    """Where and when the fetched object came down to the floor, after it had been higher than
    ``CARRIED_Z`` (on a table or in the hand) and before the mission's DROP phase began; None when
    it did not. ``track``: (s since the goal, object x, y, z, base x, y, yaw), ground truth;
    ``phases``: the mission's feedback (s, phase, detail). For diagnosis: a fetch that ended with the
    object far from the drop-off lost it on the way (or pushed it off its table). Also the base's
    pose then, and its speed and turn rate over the second before."""
    drop_t = next((t for t, ph, _ in phases if ph == "DROP"), math.inf)
    carried = False
    for i, (t, x, y, z, bx, by, byaw) in enumerate(track):
        if t >= drop_t:
            break
        carried = carried or z > CARRIED_Z
        if carried and z < FLOOR_Z:
            phase, detail = next(((ph, d) for pt, ph, d in reversed(phases) if pt <= t), ("", ""))
            fell = {"t_s": round(t, 2), "at": [round(x, 3), round(y, 3), round(z, 3)], "phase": phase,
                    "phase_detail": detail, "base": [round(bx, 3), round(by, 3), round(byaw, 3)]}
            before = [p for p in track[:i] if t - 1.5 <= p[0] <= t - 0.5]   # the fall takes ~0.3 s
            if before:
                t0, *_, bx0, by0, byaw0 = before[0]
                t1, *_, bx1, by1, byaw1 = before[-1]
                if t1 > t0:
                    fell["base_speed_mps"] = round(math.hypot(bx1 - bx0, by1 - by0) / (t1 - t0), 3)
                    fell["base_turn_rate_radps"] = round(math.remainder(byaw1 - byaw0, 2 * math.pi) / (t1 - t0), 3)
            return fell
    return None


def held_target_error(base: Tuple[float, float, float, float], obj: Tuple[float, float, float, float],
                      held: Tuple[float, float, float, float]) -> Dict:
    """How far a held grasp target lies from the object, in the true base_link.

    ``base``: the true base_link pose (x, y, z, yaw) in the world; ``obj``: the object's true
    (x, y, z, yaw) in the world; ``held``: the grasp target (x, y, z, yaw) in base_link, as
    ``/grasp_target`` carries it. The yaw error is taken mod 90 deg (the lift squares the fingers
    to any side)."""
    bx, by, bz, byaw = base
    ox, oy, oz, oyaw = obj
    c, s = math.cos(byaw), math.sin(byaw)
    tx, ty = c * (ox - bx) + s * (oy - by), -s * (ox - bx) + c * (oy - by)   # the object in base_link
    dx, dy, dz = held[0] - tx, held[1] - ty, held[2] - (oz - bz)
    dyaw = math.remainder(held[3] - (oyaw - byaw), math.pi / 2)
    return {"object_in_base_link_m": [round(tx, 3), round(ty, 3)], "dx_mm": round(1000 * dx, 1),
            "dy_mm": round(1000 * dy, 1), "dz_mm": round(1000 * dz, 1), "xy_mm": round(1000 * math.hypot(dx, dy), 1),
            "yaw_deg": round(math.degrees(dyaw), 1)}


def sim_state_clients(node) -> Tuple:
    """The standard services the harness calls on the bridge: (``SetEntityState``,
    ``SetSimulationState``) clients on ``node``. :func:`rlstack_mission.graph.wait_until_ready` waits
    for them too."""
    from simulation_interfaces.srv import SetEntityState, SetSimulationState

    return (node.create_client(SetEntityState, f"{SIM_BRIDGE}/set_entity_state"),
            node.create_client(SetSimulationState, f"{SIM_BRIDGE}/set_simulation_state"))


class FetchHarness:
    """Needs a node spun by an executor in another thread (e.g. rlstack_testing's probe)."""

    def __init__(self, node) -> None:
        from geometry_msgs.msg import PoseArray, PoseStamped, PoseWithCovarianceStamped
        from nav_msgs.msg import OccupancyGrid, Odometry
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from visualization_msgs.msg import MarkerArray

        from rlstack_common.qos import LATCHED
        from rlstack_interfaces.msg import SemanticMap
        from rlstack_interfaces.srv import ResetSim

        self.node = node
        # our extension: the standard's reset takes no seed, and a layout is a seed's placement
        self.reset_client = node.create_client(ResetSim, f"{SIM_BRIDGE}/reset")
        # the ROS 2 standard (simulation_interfaces): placing objects, pausing around a layout's set-up
        self.set_entity_client, self.sim_state_client = sim_state_clients(node)
        self.clear_client = node.create_client(Trigger, "/semantic_map/clear")
        self._lock = threading.Lock()
        self.ground_truth: Dict[str, Tuple[float, float, float]] = {}
        self.odom: Optional[Tuple[float, float]] = None
        self.odom_count = 0
        self.path_length = 0.0
        self.true_base: Optional[Tuple[float, float, float, float]] = None   # x, y, qz, qw (sim-only truth)
        self.localization_state = ""
        # whether the localiser agreed with the truth before this layout's fetch (None: no localiser)
        self.start_localised: Optional[bool] = None
        # judging the localiser (sim-only truth): the truth's recent stamps and poses, and each
        # /amcl_pose estimate's position and heading error against the truth at its stamp
        self._truth_hist: "collections.deque" = collections.deque(maxlen=400)
        self.loc_errors: List[Tuple[float, ...]] = []
        self._judge_from = -math.inf      # sim time: estimates of older frames are not judged
        self.lost_events = 0
        # judging the carry (sim-only truth): the fetched object's track while a fetch runs
        self._track_target: Optional[str] = None
        self._track_t0 = 0.0
        # (wall s since the goal, object x, y, z, base x, y, yaw)
        self.object_track: List[Tuple[float, ...]] = []
        # judging the lift's input (sim-only truth): each lift's held /grasp_target against the
        # object's true pose in the true base_link, when the lift starts
        self.object_yaw: Dict[str, float] = {}
        self._true_base_z = 0.0
        self._last_grasp_target = -math.inf
        self._lift_rest_z = 0.0
        self.grasp_target_errors: List[Dict[str, float]] = []
        # auditing the map (sim-only truth: judging, not used): the latest /semantic_map of the fetch,
        # with the QoS it is published with (depth 1: reliable, volatile)
        self.semantic_map = None
        node.create_subscription(SemanticMap, "/semantic_map", self._on_semantic_map, 1)
        node.create_subscription(PoseWithCovarianceStamped, "/amcl_pose", self._on_estimate, LATCHED)
        node.create_subscription(MarkerArray, "/sim_ground_truth/markers", self._on_gt, 10)
        node.create_subscription(Odometry, "/odom", self._on_odom, 20)
        node.create_subscription(Odometry, "/sim_ground_truth/odom", self._on_true_base, 10)
        node.create_subscription(String, "/localization/state", self._on_localization_state, LATCHED)
        node.create_subscription(PoseStamped, "/grasp_target", self._on_grasp_target, 10)
        # navigation's sensed obstacle cells, kept to be saved beside a failed fetch (diagnosis only)
        self.obstacle_grid = None
        node.create_subscription(OccupancyGrid, NAV_OBSTACLE_GRID, self._on_obstacle_grid, LATCHED)
        self.initial_pose_pub = node.create_publisher(PoseWithCovarianceStamped, "/initialpose", 1)
        # navigation's sensed obstacles: an empty message clears them (nav_controller's ~/obstacles)
        self.obstacles_pub = node.create_publisher(PoseArray, NAV_OBSTACLES, 10)
        self.latest_estimate: Optional[Tuple[float, float, float]] = None   # the localiser's, x y yaw

    def _on_gt(self, msg) -> None:
        with self._lock:
            self.ground_truth = {m.ns: (m.pose.position.x, m.pose.position.y, m.pose.position.z) for m in msg.markers}
            self.object_yaw = {m.ns: yaw_of((m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                                             m.pose.orientation.w)) for m in msg.markers}
            where = self.ground_truth.get(self._track_target) if self._track_target else None
            now = time.monotonic() - self._track_t0
            if where is not None and (not self.object_track or now - self.object_track[-1][0] >= 0.2):
                hist = self._truth_hist[-1][1:] if self._truth_hist else (math.nan,) * 3
                self.object_track.append((now, *where, *hist))

    def _on_odom(self, msg) -> None:
        p = msg.pose.pose.position
        with self._lock:
            if self.odom is not None:
                step = math.hypot(p.x - self.odom[0], p.y - self.odom[1])
                if step < 0.5:  # a reset teleports the base: not driven
                    self.path_length += step
            self.odom = (p.x, p.y)
            self.odom_count += 1

    def _on_true_base(self, msg) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        with self._lock:
            self.true_base = (p.x, p.y, q.z, q.w)
            self._true_base_z = p.z
            if self._truth_hist and stamp < self._truth_hist[-1][0]:
                self._truth_hist.clear()   # time went back
            self._truth_hist.append((stamp, p.x, p.y, yaw_of((q.x, q.y, q.z, q.w))))

    def _on_grasp_target(self, msg) -> None:
        """How far the held estimate the lift policy is given lies from the object, both in the true
        base_link: at the first /grasp_target of each lift (none for 1 s before it), and, as
        ``at_end``, at its latest one while the object had not risen 1 cm yet (the base can be
        pushed while the arm works). Judging only: nothing reads this back into the graph."""
        now = time.monotonic()
        with self._lock:
            new_lift = now - self._last_grasp_target > 1.0
            self._last_grasp_target = now
            name = self._track_target
            if not name or msg.header.frame_id != "base_link" or self.true_base is None \
                    or name not in self.ground_truth:
                return
            bx, by, qz, qw = self.true_base
            p, q = msg.pose.position, msg.pose.orientation
            obj = (*self.ground_truth[name], self.object_yaw.get(name, 0.0))
            err = held_target_error((bx, by, self._true_base_z, yaw_of((0.0, 0.0, qz, qw))), obj,
                                    (p.x, p.y, p.z, yaw_of((q.x, q.y, q.z, q.w))))
            if new_lift:
                self._lift_rest_z = obj[2]
                self.grasp_target_errors.append({"t_s": round(now - self._track_t0, 1), **err})
            elif self.grasp_target_errors and obj[2] < self._lift_rest_z + 0.01:
                self.grasp_target_errors[-1]["at_end"] = {"t_s": round(now - self._track_t0, 1), **err}

    def _on_semantic_map(self, msg) -> None:
        self.semantic_map = msg

    def _on_obstacle_grid(self, msg) -> None:
        self.obstacle_grid = msg

    def save_obstacle_grid(self, out_prefix) -> Optional[str]:
        """Write navigation's latest sensed obstacle cells as a map (``<prefix>.yaml`` + ``.pgm``, as
        ``map_saver`` writes; open it in rviz over the home map) to see what blocked a fetch. Returns
        the YAML's path, or None when navigation has sent no obstacle grid."""
        from rlstack_nav.grid import OccupancyGrid
        from rlstack_nav.map_io import save_map

        msg = self.obstacle_grid
        if msg is None or msg.info.width == 0 or msg.info.height == 0:
            return None
        o = msg.info.origin
        grid = OccupancyGrid(
            data=np.asarray(msg.data, dtype=np.int8).reshape(msg.info.height, msg.info.width),
            resolution=msg.info.resolution,
            origin=(o.position.x, o.position.y, yaw_of((o.orientation.x, o.orientation.y, o.orientation.z,
                                                         o.orientation.w))))
        yml, _ = save_map(grid, out_prefix, comment="navigation's sensed obstacles at the end of a failed fetch")
        return str(yml)

    def _on_estimate(self, msg) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        with self._lock:
            self.latest_estimate = (p.x, p.y, yaw_of((q.x, q.y, q.z, q.w)))
            hist = list(self._truth_hist)
            if len(hist) < 2 or not max(hist[0][0], self._judge_from) <= stamp <= hist[-1][0] + 0.1:
                return   # no truth to judge it by, or a frame from before this fetch (the reset)
            i = min(bisect.bisect_left([h[0] for h in hist], stamp), len(hist) - 1)
            t = min(hist[max(i - 1, 0):i + 1], key=lambda h: abs(h[0] - stamp))   # the truth nearest in time
            if abs(t[0] - stamp) > 0.1:
                return
            yaw_err = math.remainder(yaw_of((q.x, q.y, q.z, q.w)) - t[3], 2 * math.pi)
            # with the wheel odometry then (its own frame): the estimate and the odometry running ahead of
            # the truth together is wheel slip; the estimate alone, the localiser's correction
            ox, oy = self.odom if self.odom is not None else (math.nan, math.nan)
            self.loc_errors.append((math.hypot(p.x - t[1], p.y - t[2]), abs(yaw_err), stamp, p.x, p.y, t[1], t[2],
                                    ox, oy))

    def _on_localization_state(self, msg) -> None:
        with self._lock:
            if msg.data.startswith("LOST") and not self.localization_state.startswith("LOST"):
                self.lost_events += 1
            self.localization_state = msg.data

    def _call(self, client, request, timeout: float = 30.0):
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {client.srv_name} not available")
        fut = client.call_async(request)
        end = time.monotonic() + timeout
        while not fut.done():
            if time.monotonic() > end:
                raise TimeoutError(f"service {client.srv_name} did not answer in {timeout:g} s")
            time.sleep(0.01)
        return fut.result()

    def wait_ground_truth(self, timeout: float = 30.0) -> Dict[str, Tuple[float, float, float]]:
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                if self.ground_truth:
                    return dict(self.ground_truth)
            if time.monotonic() > end:
                raise TimeoutError("no /sim_ground_truth/markers")
            time.sleep(0.02)

    def delivered(self, layout: FetchLayout) -> bool:
        """The evaluator's judgement from the simulator's truth: the layout's target rests at its drop-off."""
        return on_dropoff(self.wait_ground_truth().get(layout.target, (math.nan,) * 3), layout.dropoff)

    def layout(self, seed: int, map_yaml: str, target_color: str = "", support: str = "table",
               kind: str = "cube") -> FetchLayout:
        """The fetch layout of ``seed`` (resets the simulator to the seed to read its placement: our
        extension's ``~/reset`` with a seed, which the standard's reset does not take)."""
        from rlstack_interfaces.srv import ResetSim
        from rlstack_nav.map_io import load_map

        reply = self._call(self.reset_client, ResetSim.Request(seed=int(seed)))
        if not reply.success:
            raise RuntimeError(f"reset failed: {reply.message}")
        with self._lock:
            self.ground_truth = {}
        gt = self.wait_ground_truth()
        grid = load_map(map_yaml)
        return make_layout(seed, gt, grid.occupied_mask(), grid.resolution, grid.origin[:2], target_color=target_color,
                           support=support, kind=kind)

    def set_entity_state(self, name: str, position, quaternion) -> Tuple[bool, str]:
        """Place one object now, at rest, through the standard ``SetEntityState`` (no reset): whether
        the simulator did, and its message (the standard's ``error_message``, or ``moved <name>``)."""
        from simulation_interfaces.msg import Result

        reply = self._call(self.set_entity_client, entity_state_request(name, position, quaternion))
        ok = reply.result.result == Result.RESULT_OK
        return ok, reply.result.error_message or (f"moved {name}" if ok else f"result code {reply.result.result}")

    def place(self, placements: List[Placement]) -> None:
        """Place objects at rest, one standard ``SetEntityState`` each, in order. Every pose is checked
        first (:func:`check_placements`: nothing is sent when one is bad); a refusal by the simulator
        after some were placed raises with those named (the next :meth:`apply` starts from a reset)."""
        bad = check_placements(placements)
        if bad:
            raise RuntimeError(f"placement refused: {bad}")
        done: List[str] = []
        for name, position, quaternion in placements:
            ok, message = self.set_entity_state(name, position, quaternion)
            if not ok:
                placed = f" (placed before it: {', '.join(done)})" if done else ""
                raise RuntimeError(f"set_entity_state {name} failed: {message}{placed}")
            done.append(name)

    def _set_simulation_state(self, state: int) -> int:
        """Standard ``SetSimulationState``; returns its result code (raises on any other refusal)."""
        from simulation_interfaces.msg import Result
        from simulation_interfaces.srv import SetSimulationState

        req = SetSimulationState.Request()
        req.state.state = state
        reply = self._call(self.sim_state_client, req)
        code = reply.result.result
        if code not in (Result.RESULT_OK, SetSimulationState.Response.ALREADY_IN_TARGET_STATE):
            raise RuntimeError(f"set_simulation_state {state} failed ({code}): {reply.result.error_message}")
        return code

    def apply(self, layout: FetchLayout) -> None:
        """Reset the simulator to the layout and clear the semantic map.

        The simulator is paused (standard ``SetSimulationState``), reset to the layout's seed (our
        extension's ``~/reset``: the standard's reset takes no seed), the layout's objects placed
        (standard ``SetEntityState``, :meth:`place`), then played again: no step runs between the reset
        and the placement, as when both were one ``~/reset`` call. A simulator that was paused already
        (lockstep mode) is left paused."""
        from simulation_interfaces.msg import Result, SimulationState
        from std_srvs.srv import Trigger

        from rlstack_interfaces.srv import ResetSim

        placements = layout_placements(layout)
        bad = check_placements(placements)
        if bad:
            raise RuntimeError(f"layout of seed {layout.seed}: {bad}")
        with self._lock:
            self.true_base = None
        paused_here = self._set_simulation_state(SimulationState.STATE_PAUSED) == Result.RESULT_OK
        try:
            reply = self._call(self.reset_client, ResetSim.Request(seed=layout.seed))
            if not reply.success:
                raise RuntimeError(f"reset failed: {reply.message}")
            self.place(placements)
        finally:
            if paused_here:
                self._set_simulation_state(SimulationState.STATE_PLAYING)
        self.relocalize()
        # The teleport's first camera frames went through the old pose until the localiser took the
        # new one: navigation marked obstacles and the map placed objects where nothing is (a fetch
        # found its own start "inside an obstacle", another a cube 1.5 m from any). Once the
        # estimate agrees with the truth, both forget what they took in before.
        self.start_localised = self.wait_localised()
        self.clear_sensed_obstacles()
        cleared = self._call(self.clear_client, Trigger.Request())
        if not cleared.success:
            raise RuntimeError(f"semantic map clear failed: {cleared.message}")
        with self._lock:
            self.ground_truth = {}
            self.path_length = 0.0
            self.odom = None
        self.wait_ground_truth()

    def wait_localised(self, timeout: float = 10.0, tolerance_m: float = 0.05,
                       tolerance_rad: float = 0.05) -> Optional[bool]:
        """After :meth:`relocalize`: wait until the localiser's newest estimate (/amcl_pose) lies within
        ``tolerance_m`` and ``tolerance_rad`` of the robot's true pose (it stands still after a reset).
        True then; False after ``timeout`` (the fetch starts anyway, and its result says so); None
        without a localiser (nothing to wait for)."""
        if self.node.count_subscribers("/initialpose") == 0:
            return None
        with self._lock:
            self.latest_estimate = None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                est, truth = self.latest_estimate, self.true_base
            if est is not None and truth is not None:
                yaw = yaw_of((0.0, 0.0, truth[2], truth[3]))
                if math.hypot(est[0] - truth[0], est[1] - truth[1]) <= tolerance_m and \
                        abs(math.remainder(est[2] - yaw, 2 * math.pi)) <= tolerance_rad:
                    return True
            time.sleep(0.05)
        return False

    def clear_sensed_obstacles(self) -> None:
        """Navigation forgets the obstacles its sensors marked (an empty ``~/obstacles`` message, as a
        user clears them); it marks again what the camera sees from here on."""
        from geometry_msgs.msg import PoseArray

        if self.node.count_subscribers(NAV_OBSTACLES) == 0:
            return
        msg = PoseArray()
        msg.header.frame_id = "map"
        self.obstacles_pub.publish(msg)
        time.sleep(0.2)   # a topic, not a service: give navigation the moment to take it

    def relocalize(self, timeout: float = 15.0) -> str:
        """After a reset teleported the robot: tell the localiser where it stands, as an operator
        does with rviz's "2D Pose Estimate" (/initialpose, here from the sim's truth), and wait until
        it tracks again. Nothing to do without a localiser (no /initialpose subscriber) or without
        drifting odometry (no /sim_ground_truth/odom: odom is the world). Returns the localiser's state."""
        from geometry_msgs.msg import PoseWithCovarianceStamped

        if self.node.count_subscribers("/initialpose") == 0:
            return ""
        end = time.monotonic() + timeout
        with self._lock:
            seen = self.odom_count
        truth_by = math.inf
        while True:   # the localiser must have the odometry from after the reset before the pose
            with self._lock:
                fresh = self.odom_count >= seen + 3
                truth = self.true_base
            if fresh and truth is not None:
                break
            now = time.monotonic()
            if fresh and truth_by == math.inf:
                truth_by = now + 2.0
            if now > min(end, truth_by):
                return ""   # exact odometry: the bridge publishes no truth of the base, nothing drifted
            time.sleep(0.02)
        msg = PoseWithCovarianceStamped()
        msg.header.frame_id = "map"
        msg.pose.pose.position.x, msg.pose.pose.position.y = truth[0], truth[1]
        msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = truth[2], truth[3]
        msg.pose.covariance[0] = msg.pose.covariance[7] = 0.01 ** 2
        msg.pose.covariance[35] = 0.01 ** 2
        with self._lock:
            self.localization_state = ""
        self.initial_pose_pub.publish(msg)
        while time.monotonic() < end:
            with self._lock:
                state = self.localization_state
            if state.startswith(("OK", "DEGRADED")):
                return state
            time.sleep(0.05)
        return state

    def fetch(self, layout: FetchLayout, timeout_s: float = 600.0,
              on_feedback: Optional[Callable[[str, str], None]] = None) -> Dict:
        """Send the layout's fetch and judge it. Returns the mission's result plus ``success``,
        ``dropoff_error_m`` (object to drop-off point, floor plane), ``object_z`` and ``distance_driven_m``."""
        phases: List[Tuple[float, str, str]] = []
        t0 = time.monotonic()

        def fb(phase: str, detail: str) -> None:
            phases.append((round(time.monotonic() - t0, 2), phase, detail))
            if on_feedback:
                on_feedback(phase, detail)

        with self._lock:
            self.loc_errors, self.lost_events = [], 0
            self._judge_from = self._truth_hist[-1][0] if self._truth_hist else -math.inf
            self._track_target, self._track_t0, self.object_track = layout.target, t0, []
            self.grasp_target_errors = []
            self.semantic_map, gt_start = None, dict(self.ground_truth)   # the map audit: this fetch's map
        try:
            result = send_fetch(self.node, layout.query, layout.dropoff, timeout_s, on_feedback=fb)
        finally:
            with self._lock:
                self._track_target = None
        with self._lock:
            loc = list(self.loc_errors)
            lost = self.lost_events
            track = list(self.object_track)
            grasp_errors = list(self.grasp_target_errors)
        time.sleep(1.0)  # let the dropped object come to rest before judging
        gt = self.wait_ground_truth()
        x, y, z = gt.get(layout.target, (math.nan, math.nan, math.nan))
        err = math.hypot(x - layout.dropoff[0], y - layout.dropoff[1])
        result.update(
            seed=layout.seed, query=layout.query, target=layout.target, table=layout.table,
            dropoff=list(layout.dropoff), object_final=[round(x, 3), round(y, 3), round(z, 3)],
            dropoff_error_m=round(err, 3), distance_driven_m=round(self.path_length, 2), feedback=phases,
            grasp_attempts=sum(1 for _, ph, d in phases if ph == "GRASP" and d.startswith("lifting")),
            start_localised=self.start_localised,
            success=bool(result["code"] == 0 and on_dropoff((x, y, z), layout.dropoff)))
        if not result["success"]:   # what lies at the drop-off instead (a wrong object fetched?)
            result["objects_at_dropoff"] = sorted(
                name for name, position in gt.items() if on_dropoff(position, layout.dropoff))
        if grasp_errors:   # each lift's held target against the truth (sim-only: judging, not used)
            result["grasp_target_errors"] = grasp_errors
        fell = fall_before_drop(track, phases)
        if fell is not None:   # the object left the hand before the put-down (sim-only truth: judging, not used)
            result["object_fell"] = fell
        if loc:   # a localiser ran (its /amcl_pose against the truth, sim-only: judging, not used)
            pos = sorted(e[0] for e in loc)
            result.update(loc_estimates=len(loc), loc_error_median_m=round(statistics.median(pos), 4),
                          loc_error_p95_m=round(pos[int(0.95 * (len(pos) - 1))], 4), loc_error_max_m=round(pos[-1], 4),
                          loc_heading_error_max_deg=round(math.degrees(max(e[1] for e in loc)), 2),
                          localization_lost_events=lost,
                          # (sim time s, estimate x, y, truth x, y, wheel odometry x, y in odom) of each
                          # estimate >= 5 cm off, for diagnosis
                          loc_trace_over_5cm=[[round(v, 3) if math.isfinite(v) else None for v in e[2:]]
                                              for e in loc if e[0] >= 0.05])
        smap = self.semantic_map
        if smap is not None:   # the map at the end against the truth (sim-only: judging, not used; map = the world)
            try:
                from rlstack_perception.map_audit import audit_map_message

                result["map_audit"] = audit_map_message(smap, gt, start=gt_start).as_dict()
            except Exception as exc:   # noqa: BLE001 (an audit never ends an evaluation)
                result["map_audit_error"] = f"{type(exc).__name__}: {exc}"
        return result
