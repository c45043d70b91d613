# Two commands do all set-up on a fresh machine (Python >= 3.11, g++ for hnswlib):
#   make demo   — install into .venv, index examples/notes, answer a search (no daemon needed)
#   make test   — install into .venv with test extras, run the test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install bench clean

$(BIN)/remembrancer: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/remembrancer

demo: install
	$(BIN)/remembrancer index --root examples/notes
	$(BIN)/remembrancer search "how do I restore the database from a backup" --root examples/notes

test: install
	$(BIN)/pytest -q

bench: install
	$(BIN)/python bench/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache
