# Two commands for a fresh machine:  `make repro` (run the pipeline on the bundled sample) and
# `make test`. Both create .venv when missing and install into it what they need, and nothing more:
#   make repro  installs the project alone (the default pipeline is bm25: no torch);
#   make test   installs the project with the dev, dense, dask, mem0 and graphiti extras (the test suite
#               covers dense, the Dask executor on a LocalCluster and the mem0 / graphiti adapters).
# `make repro EXTRAS=dense` adds the dense backend to the pipeline's environment.
VENV   ?= .venv
PY     := $(VENV)/bin/python
EXTRAS ?=
TEST_EXTRAS ?= dev,dense,dask,mem0,graphiti
# The dense extra needs torch. On these machines `pip install torch==2.13.0` takes a CPU build
# from local disk; elsewhere set TORCH_INDEX=https://download.pytorch.org/whl/cpu to avoid
# downloading a multi-GB CUDA build (or TEST_EXTRAS=dev to skip dense: its tests then skip).
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?=
export PATH := $(abspath $(VENV))/bin:$(PATH)
export DVC_NO_ANALYTICS := 1

.PHONY: install install-test repro test bench params clean-venv

# One stamp per set of extras: switching sets reinstalls only what is missing.
stamp = $(VENV)/.installed-$(or $(subst $(comma),-,$(1)),base)
comma := ,

define install_extras
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(findstring dense,$(1)),$(PY) -m pip install -q '$(TORCH_SPEC)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),))
	$(PY) -m pip install -q -e '.$(if $(1),[$(1)],)'
	@touch $(call stamp,$(1))
endef

$(call stamp,$(EXTRAS)): pyproject.toml
	$(call install_extras,$(EXTRAS))

ifneq ($(EXTRAS),$(TEST_EXTRAS))
$(call stamp,$(TEST_EXTRAS)): pyproject.toml
	$(call install_extras,$(TEST_EXTRAS))
endif

install: $(call stamp,$(EXTRAS))

install-test: $(call stamp,$(TEST_EXTRAS))

repro: install          ## run every stage on the current params.yaml (offline, no API key)
	dvc repro

# One pytest worker per core (pytest-xdist); TEST_WORKERS=0 runs the suite in this one process.
TEST_WORKERS ?= auto

test: install-test      ## the test suite (drives the real dvc CLI and local HTTP servers; no internet)
	$(PY) -m pytest -n $(TEST_WORKERS) $(if $(filter 0,$(TEST_WORKERS)),,--dist worksteal) --durations=25

bench: install-test     ## benchmarks (retrieval, judge throughput, workers/Dask); numbers land in tests/bench/results.json
	$(PY) tests/bench/run.py
	$(PY) tests/bench/run.py --only workers --questions 200 --sessions 500 --section workers-m  # M-shaped haystacks: the work the pool and Dask exist for

params: install         ## recompose params.yaml from conf/ (what `dvc exp run` does)
	mnemetric compose

clean-venv:
	rm -rf $(VENV)
