"""Start the fetch graph (launch/fetch.launch.yaml) through the project's runner and wait until it is ready.

Used by the demo and the evaluation: ``with FetchGraph(root) as g: ...`` starts the runner in its
own process group (logs to a file), waits for the sim bridge's services the harness calls (its
``~/reset``, our extension, and the standard ``set_entity_state`` and ``set_simulation_state``),
the semantic map's query service and the ``/fetch`` action, and on exit stops the graph with
SIGINT (then SIGTERM, SIGKILL) so that no process outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional


def use_private_domain():
    """Batch tools that start their own fetch graph (evaluation, soak, fault injection) run it on a
    ROS domain leased on this machine, unless ``ROS_DOMAIN_ID`` is set: a second graph on the same
    domain (a demo, another evaluation, the user's robot on the default domain 0) would otherwise join
    this one, and the two missions, simulators and navigation servers would answer each other's goals.
    Call before ``rclpy.init``; keep the returned lease (``None`` when the user chose the domain) for
    the life of the run. Sets ``ROS_DOMAIN_ID`` in this process, so the graph's processes inherit it."""
    if os.environ.get("ROS_DOMAIN_ID", "").strip():
        print(f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} (from the environment)", flush=True)
        return None
    from rlstack_testing.domain import lease_domain_id

    lease = lease_domain_id()
    os.environ["ROS_DOMAIN_ID"] = str(lease.domain_id)
    print(f"ROS_DOMAIN_ID={lease.domain_id}: a domain leased for this run (set ROS_DOMAIN_ID to choose one, e.g. "
          f"to watch it in rviz)", flush=True)
    return lease


class FetchGraph:
    def __init__(self, root: Path, log_path: Path, args: Optional[Dict[str, str]] = None,
                 launch_file: str = "launch/fetch.launch.yaml") -> None:
        self.root, self.log_path, self.args, self.launch_file = Path(root), Path(log_path), args or {}, launch_file
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "FetchGraph":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        cmd = [sys.executable, "-m", "rlstack_launch", str(self.root / self.launch_file)]
        cmd += [f"{k}:={v}" for k, v in self.args.items()]
        self.proc = subprocess.Popen(cmd, cwd=self.root, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def wait_ready(self, node, timeout_s: float = 120.0) -> float:
        """Block until the graph answers (services and action discovered); return the seconds it took."""
        return wait_until_ready(node, lambda: self.proc.poll() is None, timeout_s, str(self.log_path))

    def cpu_seconds(self) -> Dict[str, float]:
        """CPU time (user + system, s) each node of the graph has used so far, by node name (Linux
        /proc; the runner's children). Sampled twice, the difference over the wall time between is
        a node's share of one core: how the evaluation reports what each node costs on this machine."""
        if self.proc is None:
            return {}
        tick = os.sysconf("SC_CLK_TCK")
        out: Dict[str, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) != self.proc.pid:   # ppid: a node the runner started
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except (OSError, IndexError, ValueError):
                continue   # exited meanwhile
            name = next((a.split(":=", 1)[1] for a in argv if a.startswith("__node:=")), Path(argv[0]).name)
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
        return out

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            for sig, wait in ((signal.SIGINT, 20.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._log.close()


def wait_until_ready(node, alive: Callable[[], bool], timeout_s: float = 120.0, log_hint: str = "") -> float:
    """Block until the fetch graph's services and ``/fetch`` action are discovered from ``node``
    (spun elsewhere): the bridge's services the harness calls (its ``~/reset``, our extension, and the
    standard ``set_entity_state`` and ``set_simulation_state``: :mod:`rlstack_mission.harness`), the
    semantic map's query and clear; ``alive()`` false means the graph died. Returns the seconds it took."""
    from std_srvs.srv import Trigger

    from rlstack_interfaces.srv import QueryObjects, ResetSim
    from rlstack_mission.harness import SIM_BRIDGE, sim_state_clients
    from rlstack_mission.send_fetch import fetch_action_client

    t0 = time.monotonic()
    waits = [node.create_client(ResetSim, f"{SIM_BRIDGE}/reset"), *sim_state_clients(node),
             node.create_client(QueryObjects, "/semantic_map/query"),
             node.create_client(Trigger, "/semantic_map/clear")]
    action = fetch_action_client(node, "/fetch")   # kept: destroying it under a spinning executor crashed it
    try:
        while not (all(c.service_is_ready() for c in waits) and action.server_is_ready()):
            if not alive():
                raise RuntimeError(f"the fetch graph exited before it was ready; log: {log_hint}")
            if time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"the fetch graph was not ready within {timeout_s:g} s; log: {log_hint}")
            time.sleep(0.1)
    finally:
        for c in waits:
            node.destroy_client(c)
    return time.monotonic() - t0
