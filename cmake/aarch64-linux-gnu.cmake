# Toolchain file of the portable arm64 build (preset portable-arm64, make release ARCH=arm64):
# Debian's aarch64-linux-gnu cross compiler (g++-aarch64-linux-gnu, whose glibc is in
# /usr/aarch64-linux-gnu), the aarch64 libraries of tools/arm64-sysroot (FF_CROSS_SYSROOT:
# arm64 .debs unpacked, none installed) and the static civetweb and prometheus-cpp of
# FF_ARCH=arm64 tools/portable-deps (FF_PORTABLE_DEPS). The built binary runs here under
# qemu-user-static: the man page and completions made at build time, and the tests.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Read again for every try_compile: the defaults are computed, not taken from the cache.
get_filename_component(_ff_source ${CMAKE_CURRENT_LIST_DIR} DIRECTORY)
if(NOT FF_CROSS_SYSROOT)
  set(FF_CROSS_SYSROOT ${_ff_source}/build-portable-deps-arm64/sysroot)
endif()
set(_ff_deps ${FF_PORTABLE_DEPS})  # the preset sets it (FFPortable.cmake's cache entry)
if(NOT _ff_deps)
  set(_ff_deps ${_ff_source}/build-portable-deps-arm64/prefix)
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FF_CROSS_SYSROOT)

# Libraries, headers and packages from the sysroot, the deps prefix and the cross glibc
# only, never this machine's amd64 ones; programs (python3, pkg-config) from this machine.
set(CMAKE_FIND_ROOT_PATH ${FF_CROSS_SYSROOT} ${_ff_deps} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config drops -I/usr/include as a system folder before it adds the sysroot, so the
# sysroot's include folders are given to every compile; its libraries are found by path.
set(CMAKE_C_STANDARD_INCLUDE_DIRECTORIES
    ${FF_CROSS_SYSROOT}/usr/include/aarch64-linux-gnu ${FF_CROSS_SYSROOT}/usr/include)
set(CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES ${CMAKE_C_STANDARD_INCLUDE_DIRECTORIES})
set(ENV{PKG_CONFIG_LIBDIR}
    "${FF_CROSS_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${FF_CROSS_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${FF_CROSS_SYSROOT})
set(ENV{PKG_CONFIG_PATH} "")

find_program(FF_QEMU_AARCH64 qemu-aarch64-static)
if(FF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${FF_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
