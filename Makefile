# tilejit: `make run` and `make test` each install what is missing (Debian 12
# packages), configure, build, then run the main job or every test.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages the build and the tests need (LLVM/MLIR 22 from Debian).
APT_PACKAGES := cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools \
  llvm-22-tools catch2 libfmt-dev pybind11-dev python3-dev python3-numpy \
  python3-pytest zlib1g-dev libzstd-dev

.PHONY: all deps configure build run test clean bundle

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

# Portable bundle: LLVM/MLIR and libstdc++ linked statically (only libc, libm, libz,
# libzstd stay dynamic), stripped, packed as bundle/tilejit-bundle.tar.xz. Static links
# need several GiB each: the link pool runs one at a time.
STATIC_BUILD ?= build-static
BUNDLE_BINS := tilejit tilejit-gpu-tests
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
