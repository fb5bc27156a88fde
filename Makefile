# The two set-up commands of the README. Both install missing dependencies first,
# and each builds only what it runs: `run` the meshinfer binary, `test` it and the
# test programs. Benchmarks build with `make bench`.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu)
SCENARIO ?= scenarios/default.json

.PHONY: deps configure build run test bench clean

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

bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks

clean:
	rm -rf $(BUILD_DIR)
