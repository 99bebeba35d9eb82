# tilejit: `make run` and `make test` each install what is missing (Debian 12
# packages), configure, build, then run the main job or every test.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages the build and the tests need (LLVM/MLIR 22 from Debian).
# python3-torch (1.13, CPU) serves tests/python/test_ops_*.py on the interpreter;
# venv, pip, setuptools and wheel the `pip install .` test; libfmt-dev (fmt 9,
# header-only) the embedding API (embed/).
APT_PACKAGES := cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools \
  llvm-22-tools catch2 libfmt-dev pybind11-dev python3-dev python3-numpy \
  python3-pytest python3-torch python3-venv python3-pip python3-setuptools python3-wheel \
  zlib1g-dev libzstd-dev clang-22 libclang-rt-22-dev clang-format-22

.PHONY: all deps configure build run test clean bundle test-sanitize fuzz

all: build

# Idempotent and quiet when everything is present.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "tilejit: installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -q >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing >/dev/null \
	  || { echo "tilejit: apt-get install failed" >&2; exit 1; }; \
	fi

# The Python package is part of every fresh build (its pytest suite is a ctest);
# an existing build directory keeps its own options.
configure: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -G Ninja -S . -B $(BUILD) \
	  -DCMAKE_BUILD_TYPE=Release -DTILEJIT_PYTHON=ON $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `tilejit run` finds its tuning database as every front door does (docs/tune.md):
# TILEJIT_TUNE_DB, else tune.json in the cache directory, else the one exported on
# an H200 and shipped in tunedb/ (compiled in). The run says which it uses.
run: build
	$(BUILD)/bin/tilejit run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)

# Portable bundle: LLVM/MLIR and libstdc++ linked statically (only libc, libm, libz,
# libzstd stay dynamic), stripped, packed as bundle/tilejit-bundle.tar.xz. Static links
# need several GiB each: the link pool runs one at a time. Beside the CLI and the GPU
# tests: examples/embed, and the generator of the published-layout test checkpoint
# (the GPU session's model part runs both).
STATIC_BUILD ?= build-static
BUNDLE_BINS ?= tilejit tilejit-gpu-tests tilejit-embed-example tilejit-test-checkpoint
BUNDLE_STAGE := $(STATIC_BUILD)/bundle-stage
BUNDLE_DYNAMIC_OK := linux-vdso|ld-linux|libc\.so|libm\.so|libz\.so|libzstd\.so|libpthread\.so|libdl\.so|librt\.so

bundle: deps
	@[ -f $(STATIC_BUILD)/build.ninja ] || cmake -G Ninja -S . -B $(STATIC_BUILD) \
	  -DCMAKE_BUILD_TYPE=Release -DTILEJIT_STATIC_LLVM=ON \
	  -DCMAKE_JOB_POOLS=link=1 -DCMAKE_JOB_POOL_LINK=link $(CMAKE_FLAGS)
	@cmake --build $(STATIC_BUILD) -j $(JOBS) --target $(BUNDLE_BINS)
	@rm -rf $(BUNDLE_STAGE) && mkdir -p $(BUNDLE_STAGE)/tilejit-bundle/bin bundle
	@for b in $(BUNDLE_BINS); do \
	  strip -o $(BUNDLE_STAGE)/tilejit-bundle/bin/$$b $(STATIC_BUILD)/bin/$$b || exit 1; \
	  extra=$$(ldd $(BUNDLE_STAGE)/tilejit-bundle/bin/$$b | awk '{print $$1}' | grep -vE '$(BUNDLE_DYNAMIC_OK)'); \
	  if [ -n "$$extra" ]; then echo "tilejit: $$b links dynamically:" $$extra >&2; exit 1; fi; \
	  echo "$$b dynamic:" $$(ldd $(BUNDLE_STAGE)/tilejit-bundle/bin/$$b | awk '{print $$1}'); \
	done
	@tar -C $(BUNDLE_STAGE) -cJf bundle/tilejit-bundle.tar.xz tilejit-bundle
	@ls -l $(STATIC_BUILD)/bin/tilejit $(STATIC_BUILD)/bin/tilejit-gpu-tests \
	  $(BUNDLE_STAGE)/tilejit-bundle/bin/* bundle/tilejit-bundle.tar.xz | awk '{printf "%10.1f MiB  %s\n", $$5/1048576, $$9}'

# ASan + UBSan build of the unit and interpreter tests (docs/hardening.md). The
# timing tests ([time], [perf]) are left to the optimized build: sanitizers
# slow code down several times.
SANITIZE_BUILD ?= build-asan

test-sanitize: deps
	@[ -f $(SANITIZE_BUILD)/build.ninja ] || cmake -G Ninja -S . -B $(SANITIZE_BUILD) \
	  -DCMAKE_BUILD_TYPE=Release -DTILEJIT_SANITIZE=ON $(CMAKE_FLAGS)
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target tilejit-unit-tests tilejit-e2e-tests
	$(SANITIZE_BUILD)/bin/tilejit-unit-tests '~[time]~[perf]'
	$(SANITIZE_BUILD)/bin/tilejit-e2e-tests '~[time]~[perf]'

# Long libFuzzer runs (docs/hardening.md): each of FUZZ_TARGETS (default: all)
# for FUZZ_SECONDS, its corpus kept in $(FUZZ_BUILD)/corpus/TARGET, crashes left
# as $(FUZZ_BUILD)/fuzz-crash-TARGET-*. FUZZ_FLAGS go to libFuzzer.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=
FUZZ_FLAGS ?=

fuzz: deps
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . \
	  -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DTILEJIT_FUZZ=ON $(CMAKE_FLAGS)
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target tilejit-fuzz
	@bin=$(abspath $(FUZZ_BUILD))/bin/tilejit-fuzz; \
	for t in $(or $(FUZZ_TARGETS),$$($$bin --list)); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t && \
	  (cd $(FUZZ_BUILD) && TILEJIT_FUZZ_FLAGS="$(FUZZ_FLAGS)" \
	    $(CURDIR)/tests/fuzz/run_fuzz.sh $$bin $$t $(FUZZ_SECONDS) \
	    $(CURDIR)/tests/fuzz/regressions/$$t corpus/$$t) || exit 1; \
	done
