# Shared build helpers: warnings, sanitizers, one static library per module, tests.

function(ff_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(FF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(FF_SANITIZE)
    # -fno-sanitize-recover=all: a UBSan finding aborts (and fails the test) instead of
    # printing a line that nobody reads.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-sanitize-recover=all
                                             -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined -fno-sanitize-recover=all)
  endif()
  if(FF_BUILD_FUZZ)
    # Coverage feedback for libFuzzer in the library code; the fuzz targets themselves
    # link with -fsanitize=fuzzer (tests/fuzz).
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# ff_add_module(name SOURCES ... DEPS ...): static library ff_<name>, alias ff::<name>.
function(ff_add_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ff_${name} STATIC ${M_SOURCES})
  add_library(ff::${name} ALIAS ff_${name})
  # Every module's archive, for the portable link (cmake/FFPortable.cmake), which links them
  # as files, without the shared libraries their targets name.
  set_property(GLOBAL APPEND PROPERTY FF_MODULES ff_${name})
  # Each library exports only its own headers: a folder holding one link, <name> ->
  # src/<name>, so `#include "<name>/x.h"` works for it and for what links it, and an
  # include of a module it does not link fails to compile. (tools/check-layering checks the
  # finer table of ARCHITECTURE.md, which the link closure alone cannot.)
  set(inc ${PROJECT_BINARY_DIR}/ff-include/${name})
  if(NOT IS_SYMLINK ${inc}/${name})
    file(MAKE_DIRECTORY ${inc})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${name} ${inc}/${name} SYMBOLIC)
  endif()
  target_include_directories(ff_${name} PUBLIC ${inc})
  target_link_libraries(ff_${name} PUBLIC ${M_DEPS})
  ff_warnings(ff_${name})
endfunction()

# ff_add_test(name SOURCES ... DEPS ... LABELS ...): one gtest binary, registered with CTest.
function(ff_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT FF_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  # Test code is compiled for build time, not speed (-O1, line tables only): it is most of
  # what CI compiles twice (the plain and the sanitized build), and runs for seconds.
  target_compile_options(${name} PRIVATE -O1 -g1)
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    FF_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FF_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  ff_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  # No test keeps a history (app/history.h) or reads another test's: the one test about
  # it names its own place.
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    ENVIRONMENT "FIRSTFAULT_NO_HISTORY=1")
endfunction()

# ff_hot_path(target...): the modules on the scan's per-line path are built with -O3 in
# optimised builds (RelWithDebInfo defaults to -O2; -O3 inlines the prefix matchers and
# the number reader into their loops: about 10% of the scan's time, bench/micro).
function(ff_hot_path)
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo,Release>:-O3>)
  endforeach()
endfunction()
