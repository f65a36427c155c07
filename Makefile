# Two commands for a fresh machine:  `make repro` (run the pipeline on the bundled sample) and
# `make test`. Both create .venv when missing and install the project into it.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
EXTRAS ?= dev
export PATH := $(abspath $(VENV))/bin:$(PATH)
export DVC_NO_ANALYTICS := 1

.PHONY: install repro test bench params clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@touch $(STAMP)

install: $(STAMP)

repro: install          ## run every stage on the current params.yaml
	dvc repro

test: install           ## the test suite (drives the real dvc CLI and local HTTP servers; no internet)
	$(PY) -m pytest

bench: install          ## benchmarks; numbers land in bench/results.json
	$(PY) -m mnemetric.bench --out bench/results.json

params: install         ## recompose params.yaml from conf/ (what `dvc exp run` does)
	mnemetric compose

clean-venv:
	rm -rf $(VENV)
