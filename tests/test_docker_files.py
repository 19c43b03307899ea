"""docker/: the compose files wire real executables and params files, and the scripts' bad-input
messages (docker missing, daemon down, no permission, base image not pullable) are one clear line.

No Docker daemon is needed: `docker` is replaced on PATH by a script that answers as the real
client does in each case. Building and running the images is `make docker-test` (not part of
`make test`).
"""

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"


def _compose(name: str) -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


@pytest.mark.parametrize("name", ["compose.sim.yaml", "compose.robot.yaml"])
def test_every_service_uses_host_network_and_ipc(name):
    services = _compose(name)["services"]
    assert services
    for svc, spec in services.items():
        assert spec.get("network_mode") == "host", svc
        assert spec.get("ipc") == "host", svc   # Fast DDS shared memory across containers


def _expand_defaults(arg: str) -> str:
    """Compose's ``${VAR:-default}`` with VAR unset: the default."""
    import re
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", arg)


def test_robot_compose_runs_exactly_the_robot_launch_file_on_wall_time():
    """One robot bring-up: the container runs launch/robot.launch.yaml through the runner, with
    only declared arguments, and the launch file resolves with them (robot_state_publisher, the
    adapters and the rest of the robot graph; use_sim_time stays at its default, false)."""
    from rlstack_launch import check_launch_file, load

    services = _compose("compose.robot.yaml")["services"]
    assert set(services) == {"robot"}
    cmd = [_expand_defaults(a) for a in services["robot"]["command"]]
    assert cmd[:5] == ["python", "-m", "rlstack_launch", "rlstack_bringup", "robot.launch.yaml"]
    args = dict(a.split(":=", 1) for a in cmd[5:])
    launch_file = REPO / "launch" / "robot.launch.yaml"
    declared = set(load(str(launch_file), {}).declared)
    assert set(args) <= declared, f"undeclared launch arguments: {sorted(set(args) - declared)}"
    assert "use_sim_time" not in args
    args["map"] = str(REPO / "maps" / "home.yaml")   # the container's mounted map, here the repo's
    assert check_launch_file(str(launch_file), args) == []
    health = set(services["robot"]["environment"]["RLSTACK_HEALTH_NODES"].split(","))
    started = {spec.name for spec in load(str(launch_file), args).nodes}
    assert health == started


def test_robot_compose_reads_no_simulator_truth():
    text = (DOCKER / "compose.robot.yaml").read_text()
    assert "/sim_ground_truth" not in text and "sim_bridge" not in text


def _fake_docker(tmp_path: Path, stderr: str, rc: int) -> dict:
    """A PATH whose `docker` prints ``stderr`` and exits ``rc`` (as the real client does)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "docker"
    fake.write_text(f"#!/bin/sh\necho {shlex.quote(stderr)} >&2\nexit {rc}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{bindir}:/usr/bin:/bin"}


def _ready(env: dict, fn: str = "docker_ready", arg: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f". {DOCKER / 'lib.sh'}; {fn} {arg}"], env=env,
                          capture_output=True, text=True, timeout=30)


def test_docker_missing(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}   # no docker anywhere
    res = subprocess.run(["/bin/bash", "-c", f". {DOCKER / 'lib.sh'}; docker_ready"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        "rlstack docker: error: docker is not installed: install Docker Engine "
        "(Debian/Ubuntu: apt-get install docker.io), start it, and retry"]


@pytest.mark.parametrize("answer, expected", [
    ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
     "the Docker daemon is not running"),
    ("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock",
     "no permission on the Docker socket"),
])
def test_daemon_down_or_socket_forbidden(tmp_path, answer, expected):
    res = _ready(_fake_docker(tmp_path, answer, 1))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0]


def test_base_image_not_pullable_says_what_to_do(tmp_path):
    env = _fake_docker(tmp_path, "Error response from daemon: Get https://registry-1.docker.io/v2/: "
                                 "dial tcp: lookup registry-1.docker.io: no such host", 1)
    res = _ready(env, "base_ready", "python:3.11-slim-bookworm")
    assert res.returncode == 1
    err = res.stderr.strip().splitlines()
    assert len(err) == 1
    assert "cannot be pulled" in err[0] and "make docker-base" in err[0] and "BASE_IMAGE=" in err[0]


def test_entrypoint_refuses_a_missing_fastdds_profile():
    env = {**os.environ, "RLSTACK_FASTDDS_PROFILE": "/nonexistent/profile.xml"}
    # The entrypoint sources /opt/rlstack/env.sh in the image; here, the repo's env.sh.
    script = (DOCKER / "entrypoint.sh").read_text().replace("/opt/rlstack/env.sh", str(REPO / "env.sh"))
    res = subprocess.run(["bash", "-c", script, "entrypoint", "true"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert "RLSTACK_FASTDDS_PROFILE=/nonexistent/profile.xml is not a file" in res.stderr
