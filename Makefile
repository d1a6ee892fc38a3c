# The two commands a newcomer needs: `make run` and `make test`.
# Both create .venv on first use. `make run` installs stoker with only what the demo needs (its
# runtime dependencies and the tensorboard viewer); `make test` adds every test extra and the
# browser the end-to-end test drives.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-stamp
STAMP := $(VENV)/.installed-stamp
BENCH_STAMP := $(VENV)/.bench-stamp

.PHONY: run test lint typecheck pytest browser bench clean docs-images

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10) and "stoker needs Python 3.10 or newer")'
	$(PYTHON) -m venv $(VENV)
	@# pip 22 is the first that installs this project editable from pyproject.toml alone; a newer
	@# venv's own pip is kept, which saves a round trip to the index on every fresh clone.
	$(BIN)/python -c 'import sys, pip; sys.exit(int(pip.__version__.split(".")[0]) < 22)' \
		|| $(BIN)/python -m pip install --quiet --upgrade pip

# What the main job needs: stoker itself and the viewer the demo tells the user to start. Without
# byte-compiling every installed module (5 s of the install); Python compiles what it imports.
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile -e '.[tensorboard]'
	touch $(RUN_STAMP)

# Everything the tests need from PyPI. litdata declares torchvision, whose wheel does not import
# with the CPU torch the tests use and, once installed, breaks Lightning's import (torchmetrics
# imports it): litdata goes in without its declared requirements, the others are in the test extra.
LITDATA := litdata==0.2.76
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps $(LITDATA)
	touch $(STAMP) $(RUN_STAMP)


# The peers the benchmarks compare against (tensorboardX, tbparse, SPDL, Grain).
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

run: $(RUN_STAMP)
	$(BIN)/hello
	$(BIN)/stoker demo

test: lint typecheck pytest

# The end-to-end test opens TensorBoard in headless Chromium (Debian's package): checked on every
# run, installed when missing.
browser:
	@sh tools/ensure-chromium.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

pytest: $(STAMP) browser
	$(BIN)/python -m pytest

bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/loader_bench.py
	$(BIN)/python benchmarks/first_batch_bench.py
	$(BIN)/python benchmarks/writer_bench.py
	$(BIN)/python benchmarks/reader_bench.py
	$(BIN)/python benchmarks/board_bench.py --limit 600 --refreshes 1

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache

# The picture in the README's "Look at your logs": two demo runs, plotted by `stoker logs plot`.
docs-images: $(STAMP)
	rm -rf build/docs-logs
	$(BIN)/stoker demo --no-progress --seed 0 --lr 0.05 --logdir build/docs-logs/lr0.05 >/dev/null
	$(BIN)/stoker demo --no-progress --seed 0 --lr 0.2 --logdir build/docs-logs/lr0.2 >/dev/null
	mkdir -p docs/images
	$(BIN)/stoker logs plot build/docs-logs train/loss val/accuracy -o docs/images/logs_plot.png
	COLUMNS=80 $(BIN)/stoker logs show build/docs-logs val/accuracy --run lr0.2 --rows 3 > docs/images/logs_show.txt
