"""``make docker-sockets``: the Docker graph opens no TCP or UDP socket (middleware).

The robot graph runs in the robot image, as on the robot's computer (``rlstack:robot``,
``fetch.launch.yaml sim:=false use_sim_time:=true``, host network and IPC as in
docker/compose.*.yaml); the simulator runs on this host from the workspace (what a workstation
runs beside the robot's container); one fetch is sent from the host. While the fetch runs and
after it, every process inside the container and every host process of the graph is checked
every ``--period`` seconds for TCP/UDP sockets (``/proc/<pid>/fd`` against ``/proc/<pid>/net``:
with host networking the container's sockets are in this host's tables).

Prints a JSON report; exit 0 when no process held a socket at any sample, 1 when one did,
2 when the check could not run (no Docker, no image, the graph did not come up).
Needs root (to read the fds of the container's processes, which run as uid 1000) and the
image (``make docker IMAGES=robot``). Not part of ``make test``: CI has no Docker.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup, descendant_pids, inet_sockets

ROOT = Path(__file__).resolve().parents[1]


def fail(msg: str, code: int = 2) -> "NoReturn":  # noqa: F821
    print(f"docker-sockets: error: {msg}", file=sys.stderr)
    sys.exit(code)


def docker(*args: str, check: bool = True) -> str:
    r = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        fail(f"docker {' '.join(args[:2])}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    return r.stdout.strip()


def command_line(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return "?"
    node = next((a.split(":=", 1)[1] for a in argv if a.startswith("__node:=")), "")
    return node or " ".join(a for a in argv[:3] if a)[:80]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", default=os.environ.get("RLSTACK_ROBOT_IMAGE", "rlstack:robot"))
    p.add_argument("--query", default="the yellow cube")
    p.add_argument("--seed", type=int, default=5, help="the home layout the simulator loads")
    p.add_argument("--timeout", type=float, default=400.0, help="the fetch's time limit, s")
    p.add_argument("--period", type=float, default=2.0, help="seconds between socket samples")
    p.add_argument("--ready-timeout", type=float, default=300.0, help="s to wait for the container to be healthy")
    p.add_argument("--out", default=str(ROOT / "out" / "docker-sockets"))
    a = p.parse_args(argv)

    def interrupt(signum, _frame):   # SIGTERM as Ctrl-C: the simulator and the container are stopped too
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        fail("Docker is not usable here (not installed, daemon not running, or no permission): docker/README.md")
    if subprocess.run(["docker", "image", "inspect", a.image], capture_output=True).returncode != 0:
        fail(f"no image {a.image}: build it with 'make docker IMAGES=robot'")
    if os.geteuid() != 0:
        fail("run as root: the container's processes (uid 1000) keep their fds from other users")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"rlstack-sockets-{os.getpid()}"
    checked: dict[str, set] = {"container": set(), "host": set()}
    found: list[dict] = []
    samples = 0

    def sample(container_pid: int, host_pids: list[int]) -> None:
        nonlocal samples
        samples += 1
        groups = {"container": [container_pid, *descendant_pids(container_pid)], "host": host_pids}
        for where, pids in groups.items():
            for pid in pids:
                label = command_line(pid)
                checked[where].add(label)
                socks = inet_sockets(pid)
                if socks:
                    found.append({"where": where, "process": label, "pid": pid, "sockets": socks,
                                  "t": round(time.time(), 1)})

    with lease_domain_id() as lease, ProcessGroup(lease.domain_id, out) as group:
        sim = group.start([sys.executable, "-m", "rlstack_launch", str(ROOT / "launch" / "sim.launch.yaml"),
                           "scene:=home", f"seed:={a.seed}", "ground_truth_rate_hz:=20.0", "continuous_clock:=true"],
                          name="sim", cwd=ROOT)
        # --user: Fast DDS shared memory between a host process and a container works only under one uid
        # (each process maps the others' segments, created 0644 by their owner); the image's own user
        # (uid 1000) would see no host process, and no host process would see it (docker/README.md)
        docker("run", "-d", "--init", "--name", name, "--network", "host", "--ipc", "host",
               "--user", f"{os.getuid()}:{os.getgid()}",
               "-e", f"ROS_DOMAIN_ID={lease.domain_id}", "--health-interval", "5s",
               "-e", "RLSTACK_HEALTH_NODES=policy_node,nav_controller,semantic_map,grasp_pose,mission", a.image,
               "python", "-m", "rlstack_launch", "launch/fetch.launch.yaml", "sim:=false", "use_sim_time:=true")
        try:
            container_pid = int(docker("inspect", "-f", "{{.State.Pid}}", name))
            # the image's healthcheck: the robot graph's nodes are on the ROS graph (sockets are checked
            # while it starts, too: discovery is when a misconfigured DDS would open UDP)
            start = time.monotonic()
            while docker("inspect", "-f", "{{.State.Health.Status}}", name) != "healthy":
                if time.monotonic() - start > a.ready_timeout:
                    fail(f"the robot container was not healthy within {a.ready_timeout:g} s: docker logs {name}")
                if not sim.alive():
                    fail(f"the simulator exited: {group.log_dir / 'sim.log'}")
                sample(container_pid, [sim.popen.pid, *descendant_pids(sim.popen.pid)])
                time.sleep(a.period)
            client = group.start([sys.executable, "-m", "rlstack_mission.send_fetch", a.query,
                                  "--dropoff", "-0.5", "0", "3.14159", "--timeout", str(a.timeout)],
                                 name="send_fetch", cwd=ROOT)
            start = time.monotonic()
            while client.alive() and time.monotonic() - start < a.timeout + 120:
                if not sim.alive():
                    fail(f"the simulator exited: {group.log_dir / 'sim.log'}")
                if docker("inspect", "-f", "{{.State.Running}}", name) != "true":
                    fail(f"the robot container exited: docker logs {name}")
                host_pids = [pid for proc in (sim, client)
                             for pid in (proc.popen.pid, *descendant_pids(proc.popen.pid))]
                sample(container_pid, host_pids)
                time.sleep(a.period)
            # once more after the fetch: sockets opened late (a discovery fallback, say) show here
            sample(container_pid, [sim.popen.pid, *descendant_pids(sim.popen.pid)])
            fetch_rc = client.popen.poll()
            fetch_tail = client.tail(3)
        finally:
            (out / "robot_container.log").write_text(docker("logs", name, check=False) + "\n")
            docker("rm", "-f", name, check=False)
    report = {"image": a.image, "samples": samples, "fetch_exit_code": fetch_rc, "fetch_output": fetch_tail,
              "processes_checked": {k: sorted(v) for k, v in checked.items()},
              "inet_sockets_found": found, "ok": not found}
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0 if not found else 1


if __name__ == "__main__":
    sys.exit(main())
