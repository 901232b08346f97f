# Two entry points for people: `make demo` and `make test`.
# Both create (or refresh, when pyproject.toml changed) the local virtual
# environment .venv and install the package into it in editable mode.
# `make docs` builds the docs site, `make soak` runs the long campaigns
# (docs/development.md).

# The interpreter .venv is made from (PYTHON=... picks another). The
# distribution's /usr/bin/python3 comes first when it is 3.11 or newer and
# can make a venv: Debian builds it with PGO and LTO and links libpython
# into it, where pyenv's default build does neither (--enable-shared, no
# --enable-optimizations), and pytest took 11 to 27% fewer CPU seconds
# under it (docs/development.md). Otherwise python3 from PATH. Set with
# `=`: asked only when a recipe uses $(PYTHON) (making .venv), not on
# every make.
SYSTEM_PYTHON = $(shell /usr/bin/python3 -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && echo /usr/bin/python3)
PYTHON ?= $(or $(SYSTEM_PYTHON),python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.axisflow-installed
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Python caches compiled modules (and pytest its assertion-rewritten test
# modules) in __pycache__ (ignored by git). An environment that turns that
# off makes every pytest worker rewrite ~150 test modules (~7 s of CPU
# each) and every lit RUN line compile the modules it imports: the targets
# here let Python write them.
unexport PYTHONDONTWRITEBYTECODE

MLIR_RUNNER := /usr/lib/llvm-22/bin/mlir-runner

.PHONY: venv mlir-tools demo demo-four-tensor demo-sequant demo-pipeline demo-shapes test lint typecheck unit lit docs docs-check bench fuzz soak soak-hypothesis soak-shapes mutation clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,plot,chem,docs]'
	touch $(STAMP)

# Real MLIR for the lowering tests (mlir-opt, mlir-runner and the runner
# library): Debian's mlir-22-tools, installed when missing (needs root).
mlir-tools:
	@test -x $(MLIR_RUNNER) || command -v mlir-runner >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mlir-22-tools >/dev/null; \
	  else \
	    echo "note: mlir-22-tools is missing and needs root: apt-get install -y mlir-22-tools (the lowering tests fail without it)"; \
	  fi

demo: demo-four-tensor demo-sequant demo-pipeline demo-shapes

demo-four-tensor: $(STAMP)
	@echo '== classify-axes on the bundled four-tensor forest =='
	$(BIN)/xdsl-opt -p 'classify-axes{explain=true}' examples/four_tensor.mlir

# A real equation: the CSV-CCSD doubles residual with realistic extents, planned
# for batching over i, μ̃ and both (a screenful: per policy multiply-adds, shared
# or rebuilt values and peaks, the values that dominate the best peak, the loops
# dropped).
demo-sequant: $(STAMP)
	@echo '== axisflow plan on the CSV-CCSD doubles residual, batch i and μ̃ =='
	$(BIN)/axisflow plan examples/sequant/csv_ccsd_doubles_residual_df.txt --extents 'i=80,a=896,μ̃=896,Κ=1682' --batch 'i,μ̃'

# The fusion pipeline: the ordered schedule and its memory report, on the
# four-tensor term and on the CSV-CCSD energy batched over i then Κ.
demo-pipeline: $(STAMP)
	@echo '== classify-axes + schedule-batches on the four-tensor term (report, then IR) =='
	$(BIN)/xdsl-opt -p 'classify-axes,schedule-batches{report=table}' examples/pipeline/four_tensor.mlir
	@echo '== the CSV-CCSD energy batched over i then Κ: memory report only =='
	$(BIN)/xdsl-opt -f 'sequant{batch=i,"Κ" extents="i=80,a=896,μ̃=896,Κ=1682" elem=8}' examples/sequant/csv_ccsd_energy_df.txt -p 'classify-axes,schedule-batches{report=table}' -o /dev/null

# Shape inference: a two-layer perceptron applied to two batch sizes; OCANNL's
# MLP through a shape scheme; OCANNL's standard blocks.
demo-shapes: $(STAMP)
	@echo '== close-shapes on a shared-parameter MLP applied at two call sites =='
	$(BIN)/xdsl-opt -p close-shapes examples/shapes/mlp.mlir
	@echo '== OCANNL'"'"'s MLP (biases decide the widths): one scheme, two call sites =='
	$(BIN)/xdsl-opt -p generalize-shapes,close-shapes examples/shapes/mlp_layer.mlir
	@echo '== OCANNL'"'"'s standard blocks: MLP layer, layer norm, attention, 2-D convolution =='
	$(BIN)/xdsl-opt -p close-shapes examples/shapes/ocannl_blocks.mlir
	@echo '== The same blocks as functions calling functions: every call site served by a scheme (explain) =='
	$(BIN)/xdsl-opt -p 'close-shapes{explain=true}' examples/shapes/ocannl_functions.mlir

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/pyright

# pytest on every core (pytest-xdist; an idle worker takes tests queued for a
# busy one; PYTEST_WORKERS=0 runs in one process),
# lit on every core (its own default).
PYTEST_WORKERS ?= auto
unit: $(STAMP) mlir-tools
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal

lit: $(STAMP) mlir-tools
	$(BIN)/lit -sv tests/filecheck

# The docs site (MkDocs, Material, mkdocstrings): `make docs` into site/;
# `make test` builds it with --strict into a scratch directory, so that a
# broken link or anchor, a page missing from the nav or a docstring reference
# to nothing fails.
export NO_MKDOCS_2_WARNING := 1
docs: $(STAMP)
	$(BIN)/mkdocs build

docs-check: $(STAMP)
	@site=$$(mktemp -d "$${TMPDIR:-/tmp}/axisflow-site.XXXXXX") && \
	  trap 'rm -rf "$$site"' EXIT && \
	  $(BIN)/mkdocs build --strict --quiet --site-dir "$$site" && echo "docs: strict build passed"

# pytest and lit keep both cores busy by themselves, pyright and the docs
# build one each: all four run side by side, each one's output printed whole
# when it ends (`make unit`, `make lit`, ... run one alone).
test: lint
	@$(MAKE) --no-print-directory -j4 --output-sync=target typecheck unit lit docs-check

# A longer fuzz campaign than the one in `make test` (docs/reliability.md):
# FUZZ_ARGS="--per-input 300 --seed 7" for more.
FUZZ_ARGS ?= --per-input 120
fuzz: $(STAMP)
	$(BIN)/python -m tests.reliability.fuzzing $(FUZZ_ARGS)

# The long campaigns, not part of `make test` (docs/development.md), one
# after the other at the lowest CPU priority: every hypothesis property with
# ten times its examples (the `soak` profile of tests/conftest.py), the long
# fuzz campaign, and the shape-scheme oracle on 100,000 programs.
soak: soak-hypothesis
	nice -n 19 $(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory soak-shapes

soak-hypothesis: $(STAMP) mlir-tools
	nice -n 19 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -m hypothesis --hypothesis-profile=soak

# The scheme oracle (tests/shapes/test_schemes_oracle.py) on 100,000 generated
# programs instead of make test's 200, at the lowest CPU priority, each chunk
# of 5,000 in a process limited to 2 GB (docs/shape-schemes.md):
# SOAK_ARGS="--programs 200000 --seed 7" for others.
SOAK_ARGS ?= --programs 100000
soak-shapes: $(STAMP)
	nice -n 19 $(BIN)/python -m tests.shapes.oracle_soak $(SOAK_ARGS)

bench: $(STAMP)
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

.PHONY: test-pythons package-check

# pytest and lit under the other supported Pythons (3.11, 3.12, 3.13 except
# the one of .venv), each in its own .venv-py3.X; a version with no interpreter
# on this machine is skipped with a notice (see .ci/test-pythons).
# PYTHONS="3.12" picks versions.
PYTHONS ?=
test-pythons: $(STAMP)
	.ci/test-pythons $(PYTHONS)

# Build wheel and sdist, install the wheel into a fresh venv and use it from
# outside the checkout, then run the tests from the unpacked sdist.
package-check: $(STAMP)
	PYTHON=$(PYTHON) .ci/package-check

# Mutation testing of the core pure modules (slow: minutes per module; not part
# of `make test`). One campaign at a time, at the lowest CPU priority;
# CAMPAIGNS="decision scheduler" picks some (names in mutation/modules.toml).
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,mutation]'
	nice -n 19 $(BIN)/python mutation/run.py $(CAMPAIGNS)


clean:
	rm -rf $(VENV) .venv-py* .pytest_cache .hypothesis .ruff_cache *.egg-info build dist site mutation/work
