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


def test_robot_compose_runs_built_executables_with_existing_params_on_wall_time():
    services = _compose("compose.robot.yaml")["services"]
    expected = {"semantic_map", "grasp_pose", "localizer", "nav_controller", "policy_node", "mission",
                "twist_stamper", "arm_adapter"}
    assert set(services) == expected
    install = REPO / "ros2_ws" / "install"
    for svc, spec in services.items():
        cmd = spec["command"]
        exe = install.parent.parent / cmd[0]
        assert exe.is_file() and os.access(exe, os.X_OK), f"{svc}: {cmd[0]} is not a built executable"
        params = cmd[cmd.index("--params-file") + 1]
        assert (REPO / params).is_file(), f"{svc}: {params} missing"
        if svc not in ("twist_stamper", "arm_adapter"):   # the adapters' default is wall time already
            assert "use_sim_time:=false" in cmd, f"{svc} must run on wall time"
        assert spec["environment"]["RLSTACK_HEALTH_NODES"] == svc


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
