# The README's commands. The first use creates .venv and installs the pinned tree.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
SCALE ?= 0.02
ENGINE ?= duckdb

.PHONY: install manifest browser wasm bytecode refresh test lint lint-sql bench dev clean spark java test-spark

$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

install: $(STAMP) manifest browser wasm bytecode

## The project's own modules compiled to __pycache__, as pip compiles the installed packages, where
## PYTHONDONTWRITEBYTECODE is set. Only what changed since is compiled again.
PROJECT_PACKAGES := benchmarks cli ingest orchestration publish site_builder tests
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q $(PROJECT_PACKAGES) >/dev/null

## The dbt manifest the Dagster definitions load (orchestration/manifest.py), prepared as dagster-dbt
## documents it; then the hash of the project's files it was parsed from is recorded beside it (a
## partial parse), so that `benchwh refresh` parses again only when a file changed.
manifest: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dagster-dbt project prepare-and-package --file orchestration/manifest.py
	$(BIN)/python -m orchestration.manifest

## The site tests drive Debian's headless Chromium through its chromedriver (nothing is downloaded
## at test time): install both with apt-get when either is missing.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

## DuckDB-WASM for the site's release page (site_builder/wasm/README.md): the npm packages pinned in
## package-lock.json, from the npm registry, bundled into one ES module by esbuild. Nothing is
## fetched when a page runs. Node and npm come from Debian when missing.
WASM_BUNDLE := site_builder/wasm/dist/duckdb.mjs
$(WASM_BUNDLE): site_builder/wasm/package-lock.json site_builder/wasm/entry.mjs
	@command -v npm >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }
	cd site_builder/wasm && npm ci --no-audit --no-fund --loglevel=error && npm run --silent bundle

wasm: $(WASM_BUNDLE)

## Run the main job on the bundled offline snapshot.
refresh: $(STAMP) bytecode
	$(BIN)/benchwh refresh --offline

## The dbt project's second engine (issue 18): Apache Spark in-process (pyspark, which carries
## Spark's jars) and dbt-spark, the `.[spark]` extra pinned in requirements-spark.lock, plus Java
## from Debian when missing. Nothing is downloaded at build or test time.
SPARK_STAMP := $(VENV)/.spark-stamp
$(SPARK_STAMP): $(STAMP) requirements-spark.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-spark.lock
	@touch $(SPARK_STAMP)

spark: $(SPARK_STAMP) java

java:
	@command -v java >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

## The parity test: the offline landing built on DuckDB and on Spark, every marts.* and site.*
## table compared row for row (tests/test_spark_parity.py), and `benchwh refresh --offline --engine
## spark` publishing the DuckDB publication's rows (tests/test_refresh_spark.py), side by side.
SPARK_TESTS := tests/test_spark_parity.py tests/test_refresh_spark.py
test-spark: spark manifest bytecode
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile $(SPARK_TESTS)

## Run the test suite.
test: $(STAMP) browser wasm bytecode
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder $(addprefix --ignore=,$(SPARK_TESTS))

## Lint the Python (ruff: pyflakes + pycodestyle errors, pyproject.toml) and the dbt SQL.
lint: $(STAMP) lint-sql
	$(BIN)/ruff check --no-cache .

## Lint the dbt SQL (.sqlfluff: jinja templater, DuckDB dialect; no database needed).
lint-sql: $(STAMP)
	$(BIN)/sqlfluff lint dbt_project/models dbt_project/tests dbt_project/macros

## Scale benchmark (SCALE=1 for the full DESIGN §8 scale).
bench: $(STAMP) bytecode
	$(BIN)/python -m benchmarks.run --scale $(SCALE) --engine $(ENGINE)

## Dagster UI on http://127.0.0.1:3000 on the CLI's own DAGSTER_HOME (its runs, materializations, checks).
dev: $(STAMP)
	$(BIN)/benchwh dev --host 127.0.0.1 --port 3000

clean:
	rm -rf $(VENV) dbt_project/target dbt_project/logs .cache
