# One entry point for a fresh machine: `make demo` and `make test` install
# into .venv/ first when needed; `make install` does only that.
# TORCH_SPEC='torch==2.1.2' make install: the same stack on torch 2.1.2
# (docs/install.md lists the stacks that were run).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_SPEC ?=

# The oldest supported torch, in an environment of its own (test-torch2.1).
OLD_TORCH_SPEC := torch==2.1.2
OLD_TORCH_VENV := .venv-torch2.1

.PHONY: install demo test test-quick test-torch2.1 clean-venv

install: $(STAMP)

$(STAMP): tools/install.sh setup.py requirements/*.txt
	PYTHON=$(PYTHON) TORCH_SPEC='$(TORCH_SPEC)' bash tools/install.sh $(VENV)
	touch $(STAMP)

demo: $(STAMP)
	$(PY) tools/quickstart.py --work-dir work_dirs/quickstart

# Tests that mostly wait (rendezvous, timeouts, hangs) run beside the
# CPU-bound ones: 4 pytest-xdist workers on 2 cores; the tests of a file
# stay on one worker (--dist loadfile), so a module-scoped launch runs once.
# Files are handed out in tests/conftest.py's order, the costly ones first
# (--no-loadscope-reorder: not by their number of tests).
PYTEST_WORKERS ?= 4
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Slurm's packages for the Slurm tests, when missing (tools/install_test_deps.sh).
test: $(STAMP)
	bash tools/install_test_deps.sh
	$(VENV)/bin/lint-imports .importlinter
	$(PY) -m pytest $(PYTEST_XDIST) tests

# The tier for editing: everything but the real launches of tools and
# launchers (marker launch) and the shipped full-size configs (full_size);
# hooks, loops and reports run in-process or in forked ranks there too.
test-quick: $(STAMP)
	$(VENV)/bin/lint-imports .importlinter
	$(PY) -m pytest $(PYTEST_XDIST) -m 'not launch and not full_size' tests

# The old-torch leg of CI: the whole suite on torch 2.1.2 (the torch of
# OpenMMLab's own mmcv 2.1.0 wheels), installed into .venv-torch2.1/.
test-torch2.1:
	$(MAKE) test VENV=$(OLD_TORCH_VENV) TORCH_SPEC='$(OLD_TORCH_SPEC)'

clean-venv:
	rm -rf $(VENV) $(OLD_TORCH_VENV)
