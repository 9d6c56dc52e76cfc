# Two commands matter: `make run` and `make test`. Each sets up its own virtualenv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/gunicorn -c python:webapp.gunicorn_conf --bind $(HOST):$(PORT) 'webapp:create_app()'

test: $(STAMP)
	$(VENV)/bin/ruff check webapp tests bench
	$(VENV)/bin/ruff format --check webapp tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check webapp tests bench
	$(VENV)/bin/ruff format --check webapp tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/api_throughput.py
	$(PY) bench/chat_latency.py
	$(PY) bench/estimate_accuracy.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
