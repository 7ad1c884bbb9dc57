# A thin layer over CMake. `make help` lists the targets.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
PKG_BUILD ?= build-pkg
FUZZ_SECONDS ?= 60
CMAKE_GEN := -G Ninja
# Unity builds (the test, fuzz and package trees): 8 .cc files of a target to a translation
# unit. File-local names must be unique within a target: scripts/check_unity_names.py.
UNITY := -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8

.PHONY: help deps build test test-fast bench fuzz format format-check tidy demo demo-serving k8s-e2e package clean

help:
	@echo "make deps    install Debian packages (scripts/install-deps.sh)"
	@echo "make build   release build: build/bin/seedctl, build/bin/rsl-controller"
	@echo "make demo    the end-to-end demo (scripts/demo.sh)"
	@echo "make demo-serving  a served model scaling up and down (scripts/demo_serving.sh)"
	@echo "make test    ASan+UBSan build, every test through CTest"
	@echo "make package Debian packages in $(PKG_BUILD)/packages (docs/install.md)"
	@echo "make bench   benchmarks (bench/README.md)"
	@echo "make fuzz    every libFuzzer target for FUZZ_SECONDS (default 60) each"
	@echo "make format  clang-format -i over src/ bench/ fuzz/ tests/"
	@echo "make format-check  fail if clang-format would change a file (nothing rewritten)"
	@echo "make tidy    clang-tidy over src/"
	@echo "make k8s-e2e the fraud example on a real Kubernetes cluster (scripts/k8s-e2e.sh; skips without one)"

deps:
	bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The test build is clang's, linked by lld, not PIE (the packages, `make package`, are GCC's):
# * clang compiles a file under ASan+UBSan in about half GCC's time (sqlite_store.cc 7.9 s
#   against 14.8 s; data_cmd.cc 10.2 s against 18.0 s).
# * Its binaries start 2.5-3.7 times sooner: GCC's UBSan leaves millions of relocations in a
#   PIE (seedctl: 169 MB of .rela.dyn, 193 MB of .data, 2 s and 440 MB to start), and the
#   tests start a test binary per test and seedctl or rsl-controller often. -no-pie leaves the
#   loader nothing to relocate (serve_test lists its tests in 0.25 s against 0.46 s as PIE).
# * -g1: line tables and function names, all ASan's and UBSan's reports need (file:line in
#   every frame); less compile time than -g, smaller binaries. `make build` is the one to
#   debug in.
# * A unity build, 8 files to a translation unit, as `make package` (below): the headers a
#   target's files share (json, gtest, yaml-cpp) are parsed and their templates instrumented
#   once per batch instead of once per file. From scratch on 2 cores: 574 s (985 s of CPU);
#   file by file its jobs added up to 2,327 s (ninja's log), so at least 1,160 s on 2 cores
#   (1,823 s in a loaded CI run of 5a58076). Reports still name the original file:line.
$(ASAN_BUILD)/build.ninja:
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	  -DRSL_SANITIZE=ON -DRSL_WERROR=ON -DRSL_BENCH=OFF -DCMAKE_C_FLAGS_DEBUG=-g1 \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1 "-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -no-pie" \
	  $(UNITY)

# tests/ctest-costs.txt: each test's time in an earlier run, so that a fresh build directory
# also starts the longest tests first instead of leaving them to run alone at the end. CTest
# keeps its own figures after that.
COSTS = $(ASAN_BUILD)/Testing/Temporary/CTestCostData.txt
test: $(ASAN_BUILD)/build.ninja
	time cmake --build $(ASAN_BUILD) -j $(JOBS)
	rm -rf $(ASAN_BUILD)/test-tmp && mkdir -p $(ASAN_BUILD)/test-tmp
	[ -e $(COSTS) ] || install -D -m 644 tests/ctest-costs.txt $(COSTS)
	cd $(ASAN_BUILD) && time ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Release build of only what the packages ship (no tests, benchmarks or examples), then one
# .deb per component (packaging/, docs/install.md). Flags from dpkg-buildflags: Debian's -O2
# (the Release type's own flags are only -DNDEBUG), all its hardening (bindnow too), no -g
# (the packages' binaries are stripped; it also shortens the compile). ccache when installed.
# A unity build: each library's .cc files are compiled 8 to a translation unit, so the headers
# they share are parsed once per batch, not once per file (from scratch on 2 cores: 310 s
# against 683 s). It needs every file-local name to be unique within its layer:
# scripts/check_unity_names.py (CI's checks).
PKG_FLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CFLAGS_MAINT_STRIP=-g \
	    DEB_CXXFLAGS_MAINT_STRIP=-g dpkg-buildflags --get
$(PKG_BUILD)/build.ninja:
	CFLAGS="$$($(PKG_FLAGS) CFLAGS) $$($(PKG_FLAGS) CPPFLAGS)" \
	CXXFLAGS="$$($(PKG_FLAGS) CXXFLAGS) $$($(PKG_FLAGS) CPPFLAGS)" \
	LDFLAGS="$$($(PKG_FLAGS) LDFLAGS)" \
	cmake -S . -B $(PKG_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-DNDEBUG \
	  -DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG -DRSL_TESTS=OFF \
	  -DRSL_BENCH=OFF -DRSL_PACKAGE=ON $(UNITY) \
	  $$(command -v ccache >/dev/null && echo -DCMAKE_C_COMPILER_LAUNCHER=ccache \
	     -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) $(PKG_CMAKE_ARGS)

package: $(PKG_BUILD)/build.ninja
	cmake --build $(PKG_BUILD) -j $(JOBS)
	rm -rf $(PKG_BUILD)/packages
	cd $(PKG_BUILD) && cpack
	@ls -1 $(PKG_BUILD)/packages/*.deb

bench: build
	bash bench/run_all.sh

$(FUZZ_BUILD)/build.ninja:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DRSL_FUZZ=ON -DRSL_BENCH=OFF $(UNITY)

fuzz: $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	bash fuzz/run_all.sh $(FUZZ_BUILD)/bin $(FUZZ_SECONDS)

# The project's C++ (not what npm put in node_modules).
CXX_SOURCES = find src bench fuzz tests examples -name node_modules -prune -o \
	  \( -name '*.h' -o -name '*.cc' \) -print0

format:
	$(CXX_SOURCES) | xargs -0 clang-format -i

# Lists every file that is not formatted and exits non-zero; rewrites nothing.
format-check:
	$(CXX_SOURCES) | xargs -0 clang-format --dry-run -Werror

tidy: $(BUILD)/build.ninja
	find src -name '*.cc' ! -name '*_test.cc' | xargs clang-tidy -p $(BUILD) --quiet

demo:
	bash scripts/demo.sh

demo-serving:
	bash scripts/demo_serving.sh

k8s-e2e: build
	BUILD=$(BUILD) bash scripts/k8s-e2e.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(PKG_BUILD)
