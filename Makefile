# The README's two commands are `make demo` and `make test`; each creates .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
PYTEST_ARGS ?=

.PHONY: demo test test-fast lint typecheck bench clean chromium lab

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,browser]'
	touch $(STAMP)

demo: $(STAMP)
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

test: $(STAMP) chromium
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# For local work: everything but the tests marked slow. `make test` (and CI) runs them all.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# JupyterLab on notebooks/, bound to 127.0.0.1; it prints the URL with its token.
lab: $(STAMP)
	$(BIN)/python -m jupyter lab --no-browser --ServerApp.ip=127.0.0.1 \
	  --ServerApp.root_dir=notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

lint: $(STAMP)
	$(BIN)/ruff check metrickit tests benchmarks
	$(BIN)/mypy metrickit
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
