# The two set-up commands of the README. Both install missing dependencies first,
# and each builds only what it runs: `run` the meshinfer binary, `test` it and the
# test programs. Benchmarks build with `make bench`.
BUILD_DIR ?= build
POSIX_DIR ?= build-posix
LIBCXX_DIR ?= build-libcxx
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu)
SCENARIO ?= scenarios/default.json

.PHONY: deps configure build run test posix-test bench clean

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target meshinfer

run: build
	$(BUILD_DIR)/cli/meshinfer run $(SCENARIO)

# Chromium only for the tests (headless check of report.html); where it cannot
# be installed that test skips and says why. The run ends with every skipped
# test and its reason; on CI (CI=true) a skip for what CI provides fails.
test: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@scripts/install-deps --with-browser || echo "make: Chromium could not be installed; the report.html browser test will skip" >&2
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600; status=$$?; \
	  cd $(CURDIR) && scripts/skipped-tests $(BUILD_DIR); exit $$status
ifeq ($(shell uname -s),Linux)
	@$(MAKE) --no-print-directory posix-test
endif

# On Linux, the hw and cli tests once more as close to macOS as Linux allows:
# clang, and hw/os.cpp's portable POSIX branches instead of the Linux
# extras. Unoptimized, without debug info: it checks behaviour, and builds fast.
# It links the main build's engine, which makes no OS calls. Then the hw tests
# that need no simulator against libc++ as well (Debian's SimGrid is
# libstdc++'s), running the CLI of the first build; that pass compiles the
# engine with clang. Neither runs the shipped scenarios' simulations again
# (Shipped/): they make no OS call, and the main build checks them.
POSIX_FLAGS = -DMESHINFER_POSIX_ONLY=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
posix-test: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target meshinfer_engine
	@cmake -S . -B $(POSIX_DIR) $(POSIX_FLAGS) \
	  -DMESHINFER_ENGINE_LIBRARY=$(CURDIR)/$(BUILD_DIR)/engine/libmeshinfer_engine.a >/dev/null
	@cmake --build $(POSIX_DIR) -j $(JOBS) --target hw_tests cli_tests
	@cmake -S . -B $(LIBCXX_DIR) $(POSIX_FLAGS) -DMESHINFER_LIBCXX=ON -DMESHINFER_CLI=$(CURDIR)/$(POSIX_DIR)/cli/meshinfer >/dev/null
	@cmake --build $(LIBCXX_DIR) -j $(JOBS) --target hw_tests
	@status=0; \
	  for dir in $(POSIX_DIR) $(LIBCXX_DIR); do \
	    (cd $$dir && ctest --output-on-failure -j $(JOBS) --timeout 600 -L 'hw|cli' -E '^Shipped/') || status=1; \
	    scripts/skipped-tests $$dir || status=1; \
	  done; exit $$status

bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks

clean:
	rm -rf $(BUILD_DIR) $(POSIX_DIR) $(LIBCXX_DIR)
