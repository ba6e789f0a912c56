# The command contract (see README): setup, run, test, bench, lint, proto.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JVM_ARCHIVE := $(VENV)/spark-classes.jsa
PYSPARK_ZIPS := $(VENV)/.pyspark-zips
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
# Bytecode is written and used: the package is installed from this tree (editable), and with
# PYTHONDONTWRITEBYTECODE set (as some images set it) every process the suite and Spark start
# would compile it anew, about half a second of CPU each.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup run test check bench lint proto check-proto java clean

setup: $(STAMP) $(PYSPARK_ZIPS) java

# The source tree goes on sys.path too (a .pth file): PySpark looks up pyspark_* data source
# modules with pkgutil.iter_modules, which does not see the editable install's import hook,
# so format("cdc-files") would otherwise resolve only from the repository root.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -c "import pathlib, site; pathlib.Path(site.getsitepackages()[0], 'cdc_connectors_source.pth').write_text('$(CURDIR)\n')"
	touch $(STAMP)

# Spark's Python workers import the installed PySpark (its bytecode beside it), not the copy
# in PySpark's zips, which each new worker compiled and read the directory of again
# (scripts/pyspark_zips.py: a zip is emptied only where its modules are installed unchanged).
$(PYSPARK_ZIPS): $(STAMP)
	$(BIN)/python scripts/pyspark_zips.py
	touch $(PYSPARK_ZIPS)

# Spark 4 needs Java 17+; install it from Debian when the machine has none.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing Java 17 (Spark needs it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

# The embedded default end to end: Debezium JSON files -> OpenCDC files, schemas in the SQLite
# registry, bad lines in dead-letter files; then a summary and the orders as a typed table.
# The pipeline runs in the query's Spark session (the code of `cdc-connectors run`, one Spark
# start fewer); `cdc-connectors run examples/pipelines/shop.yaml` does the same on its own.
run: setup
	BIN=$(BIN) bash examples/tour.sh
	rm -rf .cdc/shop
	$(BIN)/python examples/shop.py --run examples/pipelines/shop.yaml .cdc/shop

# Three pytest workers on two cores: a Spark test spends much of its time waiting on the
# processes it starts, and a CLI test on its subprocesses (with two workers a sixth of the
# cores' time was idle: 7:03 against 8:21 of pytest in one hour here, make check 2:16
# against 2:36). A module's tests stay on one worker (its fixtures are shared).
TEST_WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider
# pytest exits 5 when it ran no test (a marker or a path that selects nothing): a failure,
# said in one line.
NO_TESTS := { status=$$?; [ $$status -ne 5 ] || echo "error: pytest ran no tests" >&2; exit $$status; }

# Spark's classes dumped once into a class-data-sharing archive that the suite's JVMs map:
# each Spark start then takes about half the time (tests/jvm_archive.py).
$(JVM_ARCHIVE): $(STAMP)
	$(MAKE) java
	$(BIN)/python -m tests.jvm_archive

test: setup $(JVM_ARCHIVE)
	$(PYTEST) || $(NO_TESTS)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/buf lint

# The fast tier for every change (under three minutes): no Spark, nothing marked slow, a tenth
# of the Hypothesis examples (the "check" profile; make test runs the full counts).
check: setup
	$(PYTEST) -m "not spark and not slow" --hypothesis-profile=check || $(NO_TESTS)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m bench

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/buf lint
	$(BIN)/buf breaking --against '.git#branch=main'

proto: setup
	$(BIN)/python scripts/gen_proto.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
