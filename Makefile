# make run   - set up (first time) and run the CPU matrix against real SGLang servers
# make test  - set up (first time) and run the whole test suite, then again with xdist (-n 2) but for the
#              tests that run alone or on servers of their own
VENV ?= .venv
PY := $(VENV)/bin/python
# The plugin puts the no-device driver stub (<venv>/lib/nocuda) on its servers' LD_LIBRARY_PATH
# itself where no driver is installed; the benches start servers of their own and need it here.
bench-lifecycle bench-throughput: export LD_LIBRARY_PATH := $(CURDIR)/$(VENV)/lib/nocuda$(if $(LD_LIBRARY_PATH),:$(LD_LIBRARY_PATH))
PYTEST_ARGS ?=

.PHONY: setup run test test-serial test-xdist plan bench bench-lifecycle bench-throughput clean

setup:
	@scripts/bootstrap-cpu.sh

# Each run is saved (results JSON + throughput plot) under .glmstack/results: compare a later
# run with it (PYTEST_ARGS="--glmstack-compare NAME") or calibrate floors from the history.
SAVE ?= cpu-$(shell date -u +%Y%m%dT%H%M%SZ)
run: setup
	$(PY) -m pytest tests/test_matrix.py -v --glmstack-save $(SAVE) $(PYTEST_ARGS)

test: setup test-serial test-xdist

# (--durations: every run's log lists its slowest tests, where CI time goes)
test-serial:
	$(PY) -m pytest --durations=30 $(PYTEST_ARGS)

# Tests that stop glmstack processes machine-wide (kill-orphans) run in the plain pass only:
# beside a second worker they would, by design, stop its servers too. So do the self-contained
# ones (their own servers, pytest sessions or environments, some with -n of their own): the outer
# workers change nothing in them, and the pass would only start the same servers again. So do
# throughput measurements: beside the other worker on two cores they measure that worker (a c4
# median of 32.8 tok/s against a typical 1,020 failed its floor, then 55, here); the plain pass measures.
test-xdist:
	$(PY) -m pytest -n 2 -m "not machine_wide and not self_contained and not throughput" $(PYTEST_ARGS)

bench: bench-lifecycle bench-throughput

bench-lifecycle: setup
	$(PY) bench/lifecycle.py

bench-throughput: setup
	$(PY) bench/throughput.py

clean:
	rm -rf $(VENV) .venv-torch213 .pytest_cache
