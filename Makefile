# tilejit: `make run` and `make test` each install what is missing (Debian 12
# packages), configure, build, then run the main job or every test.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages the build and the tests need (LLVM/MLIR 22 from Debian).
APT_PACKAGES := cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools \
  llvm-22-tools catch2 libfmt-dev pybind11-dev python3-dev python3-numpy \
  python3-pytest zlib1g-dev libzstd-dev

.PHONY: all deps configure build run test clean

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

configure: deps
	@[ -f $(BUILD)/build.ninja ] || cmake -G Ninja -S . -B $(BUILD) \
	  -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/bin/tilejit run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
