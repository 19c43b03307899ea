#!/usr/bin/env bash
# make docker-test: build rlstack:sim, run `make demo` inside it, check what it wrote.
# Each step is printed; any failure exits non-zero with one line saying what failed.
# Not part of `make test` (it needs Docker and builds images).
#   Results: out/docker-test/ (demo.mp4, demo.mcap, demo_report.json, container.log)
# The container uses the host's network and IPC (/dev/shm): Fast DDS over shared memory, as in
# docker/compose.*.yaml. It runs on a ROS_DOMAIN_ID leased like the tests' (a lock file in
# /tmp/rlstack-ros-domains), so it cannot talk to a graph already running on this host.
# The simulation runs under flock $RLSTACK_HEAVY_LOCK when that file exists (one heavy
# simulation at a time on shared machines); the image build never holds it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. docker/lib.sh
IMAGE_PREFIX="${IMAGE_PREFIX:-rlstack}"
IMAGE="$IMAGE_PREFIX:sim"
OUTDIR="$ROOT/out/docker-test"
HEAVY_LOCK="${RLSTACK_HEAVY_LOCK:-/tmp/rlstack_heavy.lock}"
step() { printf '\n[docker-test] step %s\n' "$*"; }
fail() { printf '[docker-test] FAILED: %s\n' "$*" >&2; exit 1; }

step "1/5: Docker is usable"
docker_ready
echo "ok: $(docker version --format 'client {{.Client.Version}}, server {{.Server.Version}}')"

step "2/5: build the images (docker/build.sh sim)"
bash docker/build.sh sim

step "3/5: lease a ROS domain id on this host"
LOCKDIR="${RLSTACK_DOMAIN_LOCK_DIR:-/tmp/rlstack-ros-domains}"
mkdir -p "$LOCKDIR"
DOMAIN=""
for i in $(seq 1 101); do
  d=$(( ( $$ + i ) % 101 + 1 ))
  exec {fd}<>"$LOCKDIR/$d.lock"
  if flock -n "$fd"; then DOMAIN=$d; break; fi
  exec {fd}>&-
done
[ -n "$DOMAIN" ] || fail "every ROS domain id 1..101 is leased by running tests; retry when they end"
echo "ok: ROS_DOMAIN_ID=$DOMAIN"

step "4/5: make demo inside $IMAGE (host network and IPC)"
NAME="rlstack-docker-test-$$"
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
cleanup() { docker rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
RUN=(docker run --name "$NAME" --network host --ipc host -e ROS_DOMAIN_ID="$DOMAIN" "$IMAGE" make demo)
if [ -e "$HEAVY_LOCK" ] && command -v flock >/dev/null; then
  echo "(waiting for $HEAVY_LOCK: one heavy simulation at a time on this machine)"
  RUN=(flock "$HEAVY_LOCK" "${RUN[@]}")
fi
start=$(date +%s)
set +e
"${RUN[@]}" 2>&1 | tee "$OUTDIR/container.log"
rc=${PIPESTATUS[0]}
set -e
echo "container exited with $rc after $(( $(date +%s) - start )) s"
docker cp "$NAME:/opt/rlstack/out/." "$OUTDIR/" 2>/dev/null || fail "the container left no out/ folder (log: $OUTDIR/container.log)"
[ "$rc" = 0 ] || fail "make demo exited with $rc inside $IMAGE (log: $OUTDIR/container.log)"

step "5/5: check out/ (video, MCAP, report)"
python3 - "$OUTDIR" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
problems = []
mp4 = out / "demo.mp4"
if not mp4.is_file() or mp4.stat().st_size < 10_000:
    problems.append("demo.mp4 missing or under 10 kB")
elif mp4.read_bytes()[4:8] != b"ftyp":
    problems.append("demo.mp4 is not an MP4 (no ftyp box)")
mcap = out / "demo.mcap"
if not mcap.is_file():
    problems.append("demo.mcap missing")
else:
    data = mcap.read_bytes()
    if not (data.startswith(b"\x89MCAP0\r\n") and data.endswith(b"\x89MCAP0\r\n")):
        problems.append("demo.mcap is not a complete MCAP file (magic at start and end)")
rep = out / "demo_report.json"
report = {}
if not rep.is_file():
    problems.append("demo_report.json missing")
else:
    report = json.loads(rep.read_text())
    if report.get("ok") is not True:
        problems.append(f"the fetch did not succeed: {report.get('result')} ({report.get('reason') or report.get('error')})")
if problems:
    print("[docker-test] FAILED: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"ok: demo.mp4 {mp4.stat().st_size / 1e6:.1f} MB, demo.mcap {mcap.stat().st_size / 1e6:.1f} MB "
      f"({sum(report['files']['mcap_messages'].values()) if isinstance(report['files'].get('mcap_messages'), dict) else '?'} messages), "
      f"report: {report['result']} in {report['fetch_wall_s']:.0f} s")
PY
printf '\n[docker-test] PASSED: make demo in %s succeeded; results in out/docker-test/\n' "$IMAGE"
