# Everything installs into .venv; the only prerequisite is Python >= 3.11.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# pip shows errors only (its warnings and the build's output stay hidden unless something fails)
PIP    := $(BIN)/python -m pip --quiet --quiet --disable-pip-version-check
# the example data sets are copied from here into probanon/datasets/data (never committed)
SHARED := ../shared/data

.PHONY: demo test bench bench-service install datasets clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip "setuptools>=77"

$(VENV)/.installed: pyproject.toml setup.py | $(BIN)/python
	$(PIP) install -e ".[service]"
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py | $(BIN)/python
	$(PIP) install -e ".[test]"
	touch $@ $(VENV)/.installed

# what the wheel ships as probanon.datasets; the build (setup.py) does the same
datasets:
	@if [ -d $(SHARED) ]; then $(PYTHON) probanon/datasets/sources.py $(SHARED); fi

install: datasets $(VENV)/.installed

demo: datasets $(VENV)/.installed
	$(BIN)/probanon demo --output-dir report --force
	@echo "open report/index.html"

test: datasets $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/mdav.py

bench-service: $(VENV)/.installed-test
	$(BIN)/python benchmarks/service.py

clean:
	rm -rf $(VENV) report .pytest_cache .hypothesis
