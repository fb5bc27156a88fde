# The two set-up commands of the README. Both install missing dependencies first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu)
SCENARIO ?= scenarios/default.json

.PHONY: deps build run test clean

deps:
	@scripts/install-deps

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/cli/meshinfer run $(SCENARIO)

# Chromium only for the tests (headless check of report.html); where it cannot
# be installed that test skips and says why.
test: build
	@scripts/install-deps --with-browser || echo "make: Chromium could not be installed; the report.html browser test will skip" >&2
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

clean:
	rm -rf $(BUILD_DIR)
