# firstfault — two commands do everything:
#   make run    install what is missing, build, diagnose a bundled example log
#   make test   install what is missing, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
EXAMPLE ?= examples/rank_exception.log

.PHONY: all deps configure build run test clean

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

clean:
	rm -rf $(BUILD)
