# Dikkat: `make run` serves the site with its grading workers; `make test` runs every test.
# Both set everything up first (scripts/setup.sh is idempotent and fast when nothing changed).
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup run lint test test-fast test-postgres test-layers test-zygote bench loadtest lock clean

setup:
	@scripts/setup.sh

run: setup
	@$(PY) manage.py serve

# The whole suite on the embedded SQLite, then the queue and concurrency tests again on a
# real PostgreSQL server (scripts/postgres.sh installs and starts a throw-away one).
test: setup lint
	@$(PY) -m pytest
	@$(MAKE) --no-print-directory test-postgres
	@$(MAKE) --no-print-directory test-zygote

# Lint, format, types and layering: ruff over the whole tree, mypy with Django's plugin
# (grader.core strictly), and the import contracts of docs/architecture.md.
lint: setup
	@echo "==> ruff check and ruff format --check"; .venv/bin/ruff check --quiet . && .venv/bin/ruff format --check --quiet .
	@echo "==> Type check (mypy)"; $(PY) -m mypy
	@echo "==> Import contracts (lint-imports)"; .venv/bin/lint-imports --no-cache

test-postgres: setup
	@url=$$(scripts/postgres.sh start) || exit 1; \
	echo "==> Queue tests on PostgreSQL ($$url)"; \
	DATABASE_URL=$$url $(PY) -m pytest -m queue -p no:cacheprovider; status=$$?; \
	scripts/postgres.sh stop; exit $$status

# Everything but the browser tests, for a quick loop while developing.
test-fast: setup
	@$(PY) -m pytest -m "not browser"

# The grader's adversarial suite again with the grading zygote on (GRADER_ZYGOTE=1: every job runs
# in a child of the zygote; tests/grader/conftest.py starts it), the tests unchanged.
test-zygote: setup
	@echo "==> tests/grader with the grading zygote on"; GRADER_ZYGOTE=1 $(PY) -m pytest tests/grader -p no:cacheprovider -q

# Switch off each protection layer of the sandbox alone; fails if a layer is caught by no test.
test-layers: setup
	@$(PY) scripts/test_layers.py

# Grader latency/throughput against a bare NumPy process, page throughput under gunicorn, then
# time to verdict in a browser (click to verdict on the page) at an idle site, then the instructor
# pages (gradebook, dashboard, CSV) on 10,000 generated students, then the cost of variants (the
# course's import against the same course before variants; a lesson page with and without them).
bench: setup
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } || true
	@$(PY) -m grader.bench --pool 1 --zygote --also courses/content/attention/06-scaled-dot-product/attention-function
	@$(PY) scripts/pagebench.py
	@$(PY) scripts/verdictbench.py
	@$(PY) scripts/instructorbench.py
	@$(PY) scripts/variantbench.py

# A deadline rush on the grading queue over HTTP: 500 students, 1,000 submissions and code-blank
# answers over 5 minutes, grading workers SIGKILLed twice. A short one:
# make loadtest ARGS="--minutes 1 --students 100 --submissions 200"
loadtest: setup
	@$(PY) scripts/loadtest.py $(ARGS)

# Re-pin dependencies after changing pyproject.toml.
lock:
	@rm -rf .venv-lock && python3 -m venv .venv-lock
	@.venv-lock/bin/pip install --quiet -e ".[dev]"
	@{ echo '# Pinned versions for repeatable installs: pip install -c requirements/constraints.txt -e ".[dev]"'; \
	   echo '# Regenerate with: make lock'; \
	   .venv-lock/bin/pip freeze --exclude-editable; } > requirements/constraints.txt
	@rm -rf .venv-lock

clean:
	rm -rf .venv var
