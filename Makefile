# The two commands: `make run` (the whole site on http://127.0.0.1:8000) and `make test`.
PYTHON_SYS ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test venv test-deps services-start services-stop clean-var

$(VENV)/.installed: requirements.txt
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PIP) install -q -r requirements-test.txt
	touch $@

venv: $(VENV)/.installed

run: $(VENV)/.installed
	scripts/run.sh

test-deps: $(VENV)/.installed-test

# Starts PostgreSQL, Redis and a Docker engine (installing the Debian packages when root), runs
# the whole suite against them, and stops them again whatever the outcome.
test: $(VENV)/.installed-test
	scripts/test.sh $(PYTEST_ARGS)

services-start:
	scripts/services.sh start

services-stop:
	scripts/services.sh stop
