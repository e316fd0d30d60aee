# The README's two commands are `make demo` and `make test`; each creates .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Two installs into the one venv, each with its own stamp: `make demo` needs only the
# runtime dependencies (the CLI and a plotting script: no extra), `make test` and the
# tools the dev and browser extras (pytest, linters, lm-eval, dspy, JupyterLab, Playwright).
# --no-compile: Python writes the bytecode of the modules the demo imports as it imports
# them, not of every module of every dependency (about 120 MB).
STAMP      := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed-runtime
PYTEST_ARGS ?=
PYTEST_WORKERS ?= 3
XDIST := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup)

.PHONY: demo test test-fast lint docs bench clean chromium lab

# The venv gets no pip of its own (pip and setuptools: 23 MB of the demo's venv) when
# $(PYTHON)'s pip can install into it (pip >= 22.3: --python); otherwise, or once
# `make test` needs it, the venv's own pip (ensurepip: offline, from the wheel Python ships).
VENV_PIP = $(BIN)/python -m ensurepip --upgrade --default-pip >/dev/null && \
  $(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/bin/python:
	$(PYTHON) -m venv --without-pip $(VENV)
	@$(PYTHON) -m pip --python $(BIN)/python --version >/dev/null 2>&1 || { $(VENV_PIP); }

# The dev install runs the venv's pip: a venv that `make demo` made without one gets it.
$(VENV)/bin/pip: | $(VENV)/bin/python
	$(VENV_PIP)

# Then the bytecode of every installed module: pip writes it for what it installs, but not
# for what `make demo` installed with --no-compile, and with PYTHONDONTWRITEBYTECODE set
# Python never writes it; without it each of the suite's processes compiles pandas, scipy,
# matplotlib and Jupyter anew (3 s a process; 5.7 of the suite's 15.7 CPU minutes after
# `make demo`).
$(STAMP): pyproject.toml | $(VENV)/bin/pip
	$(BIN)/python -m pip install --quiet -e '.[dev,browser,docs]'
	$(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || \
	  echo "compileall could not compile some modules (they are compiled when imported)"
	touch $(STAMP) $(DEMO_STAMP)

# The dev install holds the runtime one; a venv made by `make test` is used as it is.
# Runtime dependencies only (polars is the extra metrickit[polars]): a 300 MB venv.
$(DEMO_STAMP): pyproject.toml | $(VENV)/bin/python
	@if $(BIN)/python -m pip --version >/dev/null 2>&1; then pip="$(BIN)/python -m pip"; \
	else pip="$(PYTHON) -m pip --python $(BIN)/python"; fi; \
	echo "$$pip install --quiet --no-compile -e ."; $$pip install --quiet --no-compile -e .
	touch $(DEMO_STAMP)

# The demo's commands write the bytecode of the modules they import (the install wrote
# none), even where PYTHONDONTWRITEBYTECODE is set: importing numpy, pandas, scipy.stats
# and pyplot takes 1.7 s with it and 4.4 s without, and the venv grows by 35 MB, what the
# demo uses.
demo: export PYTHONDONTWRITEBYTECODE =
demo: $(DEMO_STAMP)
	@mkdir -p out
	$(BIN)/metrickit summarize data/rewards/missing_dims.jsonl
	$(BIN)/metrickit aggregate -i data/rewards/multi_dim.jsonl -o out/metrics.json
	@echo "out/metrics.json: $$(cat out/metrics.json)"
	@echo
	$(BIN)/python -m metrickit._demo data out
	@echo
	$(BIN)/metrickit report data/harbor_jobs/2025-07-14__09-00-00 --spec data/harbor_jobs_spec.py -o out/report.html

# The real-browser test needs Debian's Chromium (Playwright cannot download a browser here);
# as root with apt it is installed on first use, otherwise the test says what to install.
chromium:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for the browser test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# Three pytest-xdist workers on CI's 2 cores: many tests wait on processes they started
# (JupyterLab, Chromium, the documentation's examples), and a third worker fills those
# waits (5 min 40 s against 6 min 30 s with two, four no better; PYTEST_WORKERS=0: one process).
# loadgroup: the tests of one file stay in one worker, and so do the tests of several files
# that share a session fixture (tests/conftest.py groups them), so no fixture is computed twice.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: the suite starts about 190
# Python processes, each of which would otherwise compile metrickit anew, and each worker
# would rewrite every test file's asserts again (collection 16.5 -> 7.0 s a worker).
test test-fast: export PYTHONDONTWRITEBYTECODE =
test: $(STAMP) chromium
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# For local work: everything but the tests marked slow. `make test` (and CI) runs them all.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(XDIST) $(PYTEST_ARGS)

# JupyterLab on notebooks/, bound to 127.0.0.1; it prints the URL with its token.
lab: $(STAMP)
	$(BIN)/python -m jupyter lab --no-browser --ServerApp.ip=127.0.0.1 \
	  --ServerApp.root_dir=notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# ruff check, mypy and the import-layer contracts; CI (.ci/run) runs this before the tests.
# No `ruff format --check`: the code is not ruff-formatted (most files would change).
lint: $(STAMP)
	$(BIN)/ruff check metrickit tests benchmarks
	$(BIN)/mypy metrickit
	$(BIN)/lint-imports

# The documentation site in site/: guides, the API reference from the docstrings, and the
# notebooks executed as pages; --strict makes a broken link, a missing anchor or reference,
# or a page left out of the navigation an error. METRICKIT_DOCS_EXECUTE=false renders the
# notebooks without running them (a quick check).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
