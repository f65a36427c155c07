# Two commands for a fresh machine:  `make repro` (run the pipeline on the bundled sample) and
# `make test`. Both create .venv when missing and install the project into it.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
EXTRAS ?= dev,dense
# The dense extra needs torch. On these machines `pip install torch==2.13.0` takes a CPU build
# from local disk; elsewhere set TORCH_INDEX=https://download.pytorch.org/whl/cpu to avoid
# downloading a multi-GB CUDA build (or EXTRAS=dev to skip dense entirely).
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?=
export PATH := $(abspath $(VENV))/bin:$(PATH)
export DVC_NO_ANALYTICS := 1

.PHONY: install repro test bench params clean-venv

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(findstring dense,$(EXTRAS)),$(PY) -m pip install -q '$(TORCH_SPEC)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),))
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@touch $(STAMP)

install: $(STAMP)

repro: install          ## run every stage on the current params.yaml
	dvc repro

test: install           ## the test suite (drives the real dvc CLI and local HTTP servers; no internet)
	$(PY) -m pytest

bench: install          ## benchmarks (retrieval, judge throughput); numbers land in tests/bench/results.json
	$(PY) tests/bench/run.py

params: install         ## recompose params.yaml from conf/ (what `dvc exp run` does)
	mnemetric compose

clean-venv:
	rm -rf $(VENV)
