# Two commands for a new user (see README.md):
#   make demo   set up what the demo needs, train an MLP on the digits data set, draw its graph
#               and loss
#   make test   set up the same plus the test tools and the reference oracle (PyTorch), lint,
#               and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint format bench graphviz chromium clean

# The package with the extras the demo needs (training, plots, pictures): numpy, scikit-learn,
# matplotlib, tqdm, graphviz. No test tools, no PyTorch. pip prints errors only (-qq): on every
# editable install of a mapped package folder (viz/ installs as tinygrad_ops.viz) setuptools
# adds a note that folders named like the package may shadow it, which does not apply here.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --quiet -e ".[all]"
	touch $(STAMP)

# The test extra on top: pytest, hypothesis, ruff, selenium and torch (the reference oracle).
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --quiet -e ".[all,test]"
	touch $(TEST_STAMP)

# The Graphviz `dot` program renders the pictures; install it where we may (root + apt).
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; \
	  else \
	    echo "note: Graphviz 'dot' not found; pictures will be written as DOT text." \
	         "Install it with: sudo apt-get install graphviz (or brew install graphviz)"; \
	  fi; }

# Headless Chromium (and its driver) runs the browser tests of viz.html's page; install them
# where we may (root + apt), as Graphviz above. Without them those tests skip.
chromium:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "note: chromium/chromedriver not found; the browser tests will skip." \
	         "Install them with: sudo apt-get install chromium chromium-driver"; \
	  fi; }

demo: $(STAMP) graphviz
	$(BIN)/python -m tinygrad_ops train --dataset digits --out runs/demo

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: $(TEST_STAMP) graphviz chromium lint
	$(BIN)/python -m pytest -q

bench: $(TEST_STAMP)
	$(BIN)/python -m tinygrad_ops bench all

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .hypothesis
