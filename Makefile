# firstfault — two commands do everything:
#   make run    install the build packages, build the binary, diagnose a bundled example log
#   make test   install everything (test packages too), build, run every test (and, once
#               tools/portable-deps has run, link build/firstfault-portable the release's
#               way and check it: cmake/FFPortable.cmake; CI does)
# and:
#   make install    the binary, man page, completions and docs under PREFIX (default
#                   /usr/local), below DESTDIR if set: make install PREFIX=~/.local
#   make release    the portable binaries for x86-64 (build-portable/firstfault: needs only
#                   glibc 2.28+, serve and --metrics in) and aarch64 (build-portable-arm64/,
#                   cross-built with Debian's aarch64-linux-gnu g++), and their checks: one
#                   inside a Debian 11 root, the arm64 ones under qemu
#   make deb        a Debian package of each (build-portable*/firstfault_*.deb)
#   make rpm        an RPM of each for RHEL-family systems (build-portable*/firstfault-*.rpm)
#   make release ARCH=amd64 (or arm64; deb, rpm too): one architecture only (half the time)
#   make test-asan  the tests of our own code under AddressSanitizer + UBSan (preset asan,
#                   build-asan/; the browser, node, packaging and load tests, and the
#                   second corpus score, run in `make test` only: CMakePresets.json)
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (tools/fuzz, build-fuzz/)
# Works from any folder (make -f path/to/Makefile run), as root or as a user with sudo.
ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
BUILD ?= $(ROOT)/build
override BUILD := $(abspath $(BUILD))
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
EXAMPLE ?= examples/rank_exception.log
FUZZ_SECONDS ?= 60
PREFIX ?= /usr/local
# The release's architecture: all (the default: this machine's, and arm64 cross-built from
# amd64), this machine's (Debian's names), or arm64 (preset portable-arm64:
# tools/arm64-sysroot, cmake/aarch64-linux-gnu.cmake).
# (An ARCH from the environment in the kernel's names, x86_64 or aarch64, is read as Debian's;
# another is refused by release, deb and rpm only.)
NATIVE_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
ARCH ?= all
ALL_ARCHS := $(NATIVE_ARCH) $(if $(filter amd64,$(NATIVE_ARCH)),arm64)
override ARCH := $(patsubst x86_64,amd64,$(patsubst aarch64,arm64,$(ARCH)))
ifeq ($(ARCH),$(NATIVE_ARCH))
  PRESET := portable
  CROSS_ENV :=
  MACHINE := $(shell uname -m)
else ifeq ($(ARCH),arm64)
  PRESET := portable-arm64
  CROSS_ENV := FF_ARCH=arm64
  MACHINE := aarch64
else
  PRESET := unsupported
endif
PORTABLE := $(ROOT)/build-$(PRESET)
MAKEFLAGS += --no-print-directory
# A build folder that `make run` or `make install` configures first builds no tests
# (their packages are not installed for them); `make test` turns them on.
NO_TESTS_IF_NEW = $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DFF_BUILD_TESTS=OFF)

.PHONY: all deps deps-build deps-release configure build run test install release deb rpm release-one deb-one \
        rpm-one test-asan fuzz clean

all: build

deps:
	@$(ROOT)/tools/install-deps

deps-build:
	@$(ROOT)/tools/install-deps --build

configure: deps
	@cmake -S $(ROOT) -B $(BUILD) $(CMAKE_FLAGS) -DFF_BUILD_TESTS=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only the binary, quietly: the build's output goes to $(BUILD)/make-run.log and is shown
# only when the build fails.
run: deps-build
	@cmake -S $(ROOT) -B $(BUILD) $(CMAKE_FLAGS) $(NO_TESTS_IF_NEW) >/dev/null
	$(if $(wildcard $(BUILD)/firstfault),,@echo "make run: building firstfault (a few minutes; log: $(BUILD)/make-run.log)")
	@cmake --build $(BUILD) --target firstfault -j $(JOBS) >$(BUILD)/make-run.log 2>&1 \
	  || { cat $(BUILD)/make-run.log; echo "make run: the build failed (log: $(BUILD)/make-run.log)" >&2; exit 1; }
	@echo "\$$ firstfault diagnose $(EXAMPLE)"
	@cd $(ROOT) && $(BUILD)/firstfault diagnose $(EXAMPLE); rc=$$?; [ $$rc -le 1 ] || exit $$rc

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

install: deps-build
	@cmake -S $(ROOT) -B $(BUILD) $(CMAKE_FLAGS) $(NO_TESTS_IF_NEW) >/dev/null
	@cmake --build $(BUILD) --target firstfault ff_shell_files -j $(JOBS) >$(BUILD)/make-install.log 2>&1 \
	  || { cat $(BUILD)/make-install.log; exit 1; }
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# release: the set-up first (packages, the static civetweb and prometheus-cpp built from
# Debian's sources, for arm64 the sysroot of arm64 libraries, the Debian 11 root of the
# smoke tests: each done once), then the binary, its tests, and the glibc floor and the
# machine checked once more on the file itself.
# ARCH=all: each architecture in turn (ALL_ARCHS), each by its own make.
release deb rpm:
	@$(foreach a,$(if $(filter all,$(ARCH)),$(ALL_ARCHS),$(ARCH)),$(MAKE) -f $(ROOT)/Makefile $@-one ARCH=$(a) &&) true

release-one: deps-release
	$(if $(filter unsupported,$(PRESET)),$(error ARCH is all, $(NATIVE_ARCH) (this machine's) or arm64 (cross-built), not $(ARCH)))
	@$(CROSS_ENV) $(ROOT)/tools/portable-deps
	$(if $(CROSS_ENV),@$(ROOT)/tools/arm64-sysroot)
	@$(CROSS_ENV) $(ROOT)/tools/release-root || echo "make release: no Debian 11 root: portable_older_glibc will skip" >&2
	@cd $(ROOT) && cmake --preset $(PRESET) >/dev/null
	@cmake --build $(PORTABLE) -j $(JOBS)
	@cd $(PORTABLE) && ctest --output-on-failure -j $(JOBS)
	@$(ROOT)/tools/release-check $(PORTABLE)/firstfault 2.28 $(MACHINE)

deps-release:
	@$(ROOT)/tools/install-deps --release

deb-one: release-one
	@cd $(PORTABLE) && cpack -G DEB
	@for f in $(PORTABLE)/firstfault_*.deb; do echo "$$f: $$(dpkg-deb -f $$f Architecture), Depends: $$(dpkg-deb -f $$f Depends)"; done

rpm-one: release-one
	@cd $(PORTABLE) && cpack -G RPM
	@rpm -qlp $(PORTABLE)/firstfault-*.rpm

test-asan: deps
	@cd $(ROOT) && cmake --preset asan >/dev/null
	@cd $(ROOT) && cmake --build --preset asan -j $(JOBS)
	@cd $(ROOT) && ctest --preset asan -j $(JOBS)

fuzz: deps
	@$(ROOT)/tools/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ROOT)/build-portable $(ROOT)/build-portable-deps $(ROOT)/build-portable-arm64 \
	  $(ROOT)/build-portable-deps-arm64 $(ROOT)/build-asan $(ROOT)/build-fuzz
