# firstfault — two commands do everything:
#   make run    install what is missing, build, diagnose a bundled example log
#   make test   install what is missing, build, run every test
# and for robustness work (issue 7):
#   make test-asan  every test under AddressSanitizer + UBSan (preset asan, build-asan/)
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (tools/fuzz, build-fuzz/)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
EXAMPLE ?= examples/rank_exception.log
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build run test test-asan fuzz clean

all: build

deps:
	@./tools/install-deps

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@echo "\$$ firstfault diagnose $(EXAMPLE)"
	@./$(BUILD)/firstfault diagnose $(EXAMPLE); rc=$$?; [ $$rc -le 1 ] || exit $$rc

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	@ctest --preset asan -j $(JOBS)

fuzz: deps
	@./tools/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
