# rlstack: two commands do everything on a fresh machine.
#   make demo   set up, then run the main job headless on the embedded default (PyBullet)
#   make test   set up, then run every test (colcon test + tests/) and print one summary
#   make setup ROBOT=1   the robot-side install only (no torch / SB3 / Gymnasium / PyBullet)
# Every target that runs project code sources env.sh (venv, workspace, middleware settings).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
ENV := source ./env.sh

.PHONY: help setup build test test-packages test-system lint demo eval-fetch bench train lock clean distclean docker docker-base docker-test view

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

setup: ## create .venv, install pinned deps, build ros2_ws (idempotent); ROBOT=1: the robot side only
	@ROBOT="$(ROBOT)" bash tools/setup.sh

build: setup ## alias of setup: the workspace build is part of it

test: setup ## run all tests: colcon test (package tests) + tests/ (system tests)
	@$(ENV) && bash tools/run_tests.sh

test-packages: setup ## only colcon test (package tests)
	@$(ENV) && bash tools/run_tests.sh packages

test-system: setup ## only the cross-package system tests in tests/
	@$(ENV) && bash tools/run_tests.sh system

lint: setup ## ruff over the repository (ruff.toml), the complexity exceptions and the node sizes (also in make test)
	@$(ENV) && ruff check . && python -m pytest -q -p no:cacheprovider tests/test_lint.py tests/test_node_size.py

demo: setup ## run the main job headless and write results to out/
	@$(ENV) && python tools/demo.py

eval-fetch: setup ## the fetch mission (robot mode) over 20 seeded layouts: make eval-fetch [LAYOUTS=20] [BACKEND=mujoco] [ARGS=--ground-truth-grasp]
	@$(ENV) && python -m rlstack_mission.evaluate --layouts $(or $(LAYOUTS),20) --backend $(or $(BACKEND),pybullet) $(ARGS)

view: setup ## a graph (default: the fetch graph) with the live view beside it; prints the page's URL, Ctrl-C stops both: make view [GRAPH=launch/sim.launch.yaml] [ARGS='seed:=1'] [VIEW_ARGS='-p port:=8780']
	@$(ENV) && { python -m rlstack_launch $(or $(GRAPH),launch/fetch.launch.yaml) $(ARGS) & graph=$$!; \
	  trap 'kill -INT $$graph 2>/dev/null; wait $$graph 2>/dev/null' EXIT; \
	  python -m rlstack_view.live_view --ros-args $(VIEW_ARGS); }

bench: setup ## run the benchmarks in bench/ (JSON + tables into out/bench/)
	@$(ENV) && bash bench/run_all.sh

train: setup ## train a task from scratch + export a bundle to a new policies/ folder: make train TASK=cartpole [OVERWRITE=1] [ARGS=...]
	@test -n "$(TASK)" || { echo "usage: make train TASK=<name of a config/train/*.yaml> [OVERWRITE=1] [ARGS='--seed 1']" >&2; exit 2; }
	@$(ENV) && python -m rlstack_learning.train --task "$(TASK)" --export $(if $(filter 1,$(OVERWRITE)),--overwrite) $(ARGS)

lock: setup ## re-pin requirements/constraints.txt from the current .venv
	@$(ENV) && python tools/lock.py

docker: ## build the container images rlstack:sim and rlstack:robot (docker/README.md): make docker [BASE_IMAGE=...]
	@bash docker/build.sh $(IMAGES)

docker-base: ## no Docker Hub here: a local Debian bookworm base image from debootstrap (docker/site.env)
	@bash docker/make_base.sh

docker-test: ## build the images, run make demo in rlstack:sim, check out/docker-test/ (mp4, MCAP, report); not in make test
	@bash docker/test.sh

docker-sockets: ## the robot image's graph + the host simulator, one fetch: no process may hold a TCP/UDP socket (root; out/docker-sockets/)
	@$(ENV) && python docker/socket_check.py $(ARGS)

clean: ## remove build outputs (keeps .venv)
	rm -rf ros2_ws/build ros2_ws/install ros2_ws/log out .venv/.rlstack/build

distclean: clean ## remove everything setup made, .venv included
	rm -rf .venv
