# Two commands matter: `make run` and `make test`. Each sets up the virtualenv it needs:
# `run` installs the app's runtime dependencies only, the others add the dev tools.
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bench clean messages

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(RUNTIME): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

# The dev extras include the runtime dependencies, so `make run` needs nothing more.
$(DEV): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(RUNTIME)

# The emails' links open the app where `make run` serves it, unless WEBAPP_PUBLIC_URL
# says otherwise (the address people reach it at, behind a proxy)
run: export WEBAPP_PUBLIC_URL ?= http://$(HOST):$(PORT)
# The mailer (docs/operations.md, "Email") and the webhook worker (docs/webhooks.md) run
# beside gunicorn and stop with it. Not echoed: what it prints is the processes' log, in
# one format (webapp/infra/logs.py)
run: $(RUNTIME)
	@$(PY) -m webapp.workers.mailer & mailer=$$!; $(PY) -m webapp.workers.webhooks & hooks=$$!; \
	trap 'kill $$mailer $$hooks 2>/dev/null' EXIT; \
	$(VENV)/bin/gunicorn -c python:webapp.web.gunicorn_conf --bind $(HOST):$(PORT) 'webapp:create_app()'

# Two pytest workers, a test file each at a time (pytest-xdist): most of the suite waits on
# browsers, gunicorn and Redis, and it has 30 minutes in CI. `make test PYTEST_WORKERS=0`
# runs it in one process.
PYTEST_WORKERS ?= 2
test: lint
	$(PY) -m pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

# mypy checks the app (pyproject.toml: strict), then bench/ apart: its scripts need no
# annotations, but what they call of the app is checked (a name gone, a call's arguments,
# a tuple's shape), with no config file, so the app's strict mode stays the app's. The
# app's modules are read, not reported (follow-imports=silent); a cache of bench's own,
# as its options differ.
lint: $(DEV)
	$(VENV)/bin/ruff check webapp tests bench
	$(VENV)/bin/ruff format --check webapp tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --config-file= --python-version 3.11 --ignore-missing-imports \
		--follow-imports=silent --check-untyped-defs --no-implicit-reexport \
		--warn-unused-ignores --warn-redundant-casts --cache-dir .mypy_cache/bench bench
	$(VENV)/bin/lint-imports --no-cache

# After changing words people read: extract them and merge them into translations/*/
# LC_MESSAGES/messages.po, then translate every empty or fuzzy msgstr there
# (tests/unit/test_catalogues.py fails until that is done). The .mo are built, not kept.
messages: $(DEV)
	$(VENV)/bin/pybabel extract -F babel.cfg -k lazy_gettext --no-location --sort-output \
		--omit-header -o translations/messages.pot .
	$(VENV)/bin/pybabel update -i translations/messages.pot -d translations -w 100 \
		--ignore-obsolete --no-fuzzy-matching

# Every goal of issues 14, 23, 25, 26 and 32 with its figure and pass or miss
# (docs/performance.md)
bench: $(DEV)
	$(PY) bench/redis_cost.py --million
	$(PY) bench/api_throughput.py
	$(PY) bench/api_throughput.py --threads 2
	$(PY) bench/page_poll.py
	$(PY) bench/ws_sizing.py --classes gevent --sockets 0,1000
	$(PY) bench/chat_latency.py --members 200 --rate 20 --bare
	$(PY) bench/room_ceiling.py
	$(PY) bench/scaling_sim.py
	$(PY) bench/windows_sim.py
	$(PY) bench/drop_start.py
	$(PY) bench/queueing_methods.py
	$(PY) bench/flash.py
	$(PY) bench/capacity.py
	$(PY) bench/capacity.py --bare
	$(PY) bench/gate.py
	$(PY) bench/challenge_cost.py
	$(PY) bench/bots.py
	$(PY) bench/bots.py --challenge on
	$(PY) bench/estimate_accuracy.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
