# Two commands do all the set-up on a fresh Debian/Ubuntu machine:
#   make demo   - the main job
#   make test   - the default test suite
# Both create .venv on first use (PyTorch first, then the package with its extras)
# and install the headless-rendering system libraries.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# The torch/torchvision pair that works together here (see DEVELOPERS notes in README).
TORCH  := torch==2.14.1 torchvision==0.29.1
STAMP  := $(VENV)/.sim2real-installed
SYSTEM_PACKAGES := libegl1 libegl-mesa0 libgl1-mesa-dri libosmesa6 libfaketime chromium
# Keep DDS on loopback in everything make starts.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export MUJOCO_GL ?= egl

.PHONY: help venv deps test explore test-heavy test-slow lint demo bench baselines clean

help:
	@echo "make demo       run the main job (writes reports/demo/)"
	@echo "make test       run the default test suite"
	@echo "make test-heavy run the heavy integration tests (CI runs them after make test)"
	@echo "make test-slow  run the slow tests"
	@echo "make explore    the property tests with fresh random examples (make test draws fixed ones)"
	@echo "make bench      run the simulation benchmark (JSON in reports/bench_sim.json)"
	@echo "make lint       ruff and the type checker (basedpyright)"
	@echo "make baselines  retrain, export and evaluate the shipped baseline policies (hours on 2 cores;"
	@echo "                ARGS='--ray [HOST:PORT]' builds them as Ray tasks, ARGS='ArmReach' one of them)"

deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing system packages:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then \
	    sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "sim2real needs the headless rendering libraries:$$missing"; \
	    echo "run: sudo apt-get install$$missing"; exit 1; \
	  fi; \
	fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Reinstall when the dependency list changes.
$(STAMP): pyproject.toml setup.py | $(VENV)/bin/python
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[all,dev]"
	touch $(STAMP)

venv: deps $(STAMP)

# Two workers: the wall-clock tests one at a time on one, the computing tests on the other
# (tests/conftest.py).
TEST_ARGS ?= -n 2 -q

test: venv
	$(PY) -m pytest -m "not slow and not heavy" $(TEST_ARGS)

# The property tests with fresh random examples (`make test` draws the same ones each run).
explore: venv
	HYPOTHESIS_PROFILE=explore $(PY) -m pytest -m "not slow and not heavy" -q \
		$$(grep -Rl --include='test_*.py' "from hypothesis" tests) $(TEST_ARGS)

# One at a time: several drive the console in Chromium and judge a person's handover.
test-heavy: venv
	$(PY) -m pytest -m "heavy and not slow" -q

test-slow: venv
	$(PY) -m pytest -m slow -q

# Stubs for MuJoCo's compiled bindings, regenerated when the installed packages change.
typings/.stamp: $(STAMP) tools/typing_stubs.py
	rm -rf typings
	$(PY) tools/typing_stubs.py typings
	touch $@

lint: venv typings/.stamp
	$(VENV)/bin/ruff check .
	$(VENV)/bin/basedpyright -p pyproject.toml

demo: venv
	$(VENV)/bin/sim2real demo --out reports/demo

bench: venv
	mkdir -p reports
	$(VENV)/bin/sim2real bench sim --json > reports/bench_sim.json
	@cat reports/bench_sim.json

# ARGS: passed on, e.g. ARGS=--ray (Ray tasks on this machine), ARGS="ArmReach --ray" or ARGS="--ray HOST:PORT".
baselines: venv
	$(PY) -m sim2real.baselines $(ARGS)

clean:
	rm -rf build install log reports .pytest_cache
