# The portable link: one binary that runs on other Linux distributions. Everything but glibc
# is linked statically: libstdc++ and libgcc (-static-libstdc++ -static-libgcc), every
# module's archive, and the archives (.a) of RE2, Vectorscan (libhs), yaml-cpp, SQLite,
# libarchive with the compression libraries it and io use (zlib, liblzma, libzstd, libbz2,
# and whichever of libarchive's other dependencies Debian ships as .a), and civetweb,
# prometheus-cpp (core, pull) and fmt, which Debian ships as shared libraries only:
# tools/portable-deps builds their archives from Debian's own source packages into
# FF_PORTABLE_DEPS. RE2 of Debian 12 (2022-06) does not use abseil. tools/release-check
# fails if the binary needs any shared library that is not glibc's or a glibc version newer
# than 2.28.
#
# One link, two uses (ff_portable_link):
#  - FF_PORTABLE=ON (presets portable and portable-arm64, `make release`): `firstfault` itself
#    is linked this way, and serve and --metrics must be in (the preset asks for both).
#  - FF_PORTABLE_LINK (AUTO in every other build of GCC, not sanitized): `firstfault-portable`
#    beside the normal binary, from the same objects, once tools/portable-deps has run (CI
#    runs it; ON requires it). So the test build (CI's) links the release's way in seconds
#    and tests/install checks that binary as the release's (smoke tests, the glibc floor),
#    without a second compile; the release itself differs only in its compile flags (-O3).
# The links name the archives as files, not the libraries' CMake targets, whose shared
# libraries the normal build links: the targets give the compiles their headers only.
#
# The glibc floor (FF_GLIBC_FLOOR, on by default): src/app/glibc_floor.cc and the --wrap
# options of its list (glibc_floor.def), so that a binary linked against Debian 12's glibc
# 2.36 asks for no symbol newer than GLIBC_2.28; tools/release-check proves it.
#
# Included before the find_package calls; ff_portable_finish() runs after the modules.
set(FF_PORTABLE_DEPS ${PROJECT_SOURCE_DIR}/build-portable-deps/prefix CACHE PATH
    "Static civetweb, prometheus-cpp and fmt for the portable link (tools/portable-deps)")
set(FF_PORTABLE_LINK AUTO CACHE STRING
    "Also link firstfault-portable from this build's objects, the release's way (cmake/FFPortable.cmake): AUTO (when tools/portable-deps has run), ON, OFF")
option(FF_GLIBC_FLOOR "Portable link: no glibc symbol newer than GLIBC_2.28 (src/app/glibc_floor.cc)" ON)
if(FF_PORTABLE)
  list(PREPEND CMAKE_PREFIX_PATH ${FF_PORTABLE_DEPS})
  set(FF_PORTABLE_FIND NO_DEFAULT_PATH PATHS ${FF_PORTABLE_DEPS})  # civetweb, prometheus-cpp: never the shared ones
  set(CMAKE_FIND_LIBRARY_SUFFIXES .a)  # what the Find modules and pkg-config find: archives
  # No RPATH, not even in the build tree: the binary is copied to other machines. (A cross
  # build's library folders are not the compiler's implicit ones, so CMake would otherwise
  # write the sysroot's into the binary: tools/release-check refuses it.)
  set(CMAKE_SKIP_RPATH ON)
  # fmt: Debian's libfmt-dev has libfmt.so only (and the arm64 sysroot's would be dangling):
  # its headers here, its archive (tools/portable-deps) in the link.
  find_path(FF_FMT_INCLUDE fmt/format.h REQUIRED)
  add_library(fmt::fmt INTERFACE IMPORTED GLOBAL)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${FF_FMT_INCLUDE})
endif()

# ff_portable_archives(<var> <name>...): the archive lib<name>.a of each name, in order,
# FF_PORTABLE_DEPS first. A name with no archive is an error naming the package or the tool
# that makes it; a name written <name>? is optional: without an archive it is left out with
# a note (the link then fails if it was needed).
function(ff_portable_archives var)
  set(out)
  foreach(name ${ARGN})
    string(REGEX REPLACE "[?]$" "" lib ${name})
    find_library(FF_ARCHIVE_${lib} NAMES lib${lib}.a HINTS ${FF_PORTABLE_DEPS}/lib)
    if(FF_ARCHIVE_${lib})
      list(APPEND out ${FF_ARCHIVE_${lib}})
    elseif(name STREQUAL lib)
      message(FATAL_ERROR "The portable link needs lib${lib}.a: not in ${FF_PORTABLE_DEPS}/lib "
              "(tools/portable-deps builds civetweb, prometheus-cpp and fmt there) nor in the "
              "system's library folders (its Debian -dev package: tools/install-deps --build)")
    else()
      message(STATUS "Portable link: no lib${lib}.a; not linked (only needed for formats firstfault does not read)")
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
endfunction()

# ff_portable_link(<target>): links <target> (an executable holding ff_main's object) the
# portable way. The modules' archives go in one group (the linker rescans it, so their
# order does not matter), then each third-party archive after the ones that use it.
function(ff_portable_link target)
  get_property(modules GLOBAL PROPERTY FF_MODULES)
  set(module_archives)
  foreach(module ${modules})
    list(APPEND module_archives $<TARGET_FILE:${module}>)
  endforeach()
  set(names)
  if(FF_PROMETHEUS)
    list(APPEND names prometheus-cpp-pull prometheus-cpp-core)
  endif()
  if(FF_SERVE_FOUND OR FF_PROMETHEUS)
    list(APPEND names civetweb-cpp civetweb)
  endif()
  list(APPEND names yaml-cpp re2)
  if(HS_FOUND)
    list(APPEND names hs)
  endif()
  # libarchive, then its own dependencies (pkg-config --static --libs libarchive), but for
  # libxml2, which only its XAR reader and writer use: firstfault enables tar, raw and bzip2
  # only (io.archive.cc, io.codecs.cc, bundle.cc), so those objects stay out of the link, and
  # libxml2.a, given, would need ICU, which is not (issue 35). (Enabling those formats alone
  # is not enough: the pax writer's one helper sits beside the table of every writer;
  # src/app/archive_static.cc defines it, so that object stays out.)
  list(APPEND names sqlite3 archive nettle? acl? lzma zstd lz4? bz2? z fmt)
  ff_portable_archives(archives ${names})
  set(app ${PROJECT_SOURCE_DIR}/src/app)
  target_sources(${target} PRIVATE ${app}/archive_static.cc ${PROJECT_SOURCE_DIR}/src/shell/build_kind.cc)
  # --version says "portable": this object's build_kind() is linked, libff_shell.a's is not.
  target_compile_definitions(${target} PRIVATE FF_BUILD_TYPE="${CMAKE_BUILD_TYPE}" FF_PORTABLE_BUILD=1)
  target_link_libraries(${target} PRIVATE
    -Wl,--start-group ${module_archives} -Wl,--end-group ${archives})
  add_dependencies(${target} ${modules})
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  set_target_properties(${target} PROPERTIES SKIP_BUILD_RPATH ON LINKER_LANGUAGE CXX)
  if(FF_GLIBC_FLOOR)
    # glibc_floor.def's names, each wrapped; libpthread and libdl stay NEEDED, where glibc
    # before 2.34 keeps the pthread and dl functions (stubs in 2.34 and later).
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${app}/glibc_floor.def)
    file(STRINGS ${app}/glibc_floor.def floor_lines REGEX "^FF_(OLD|SHIM)\\(")
    set(wraps)
    foreach(line ${floor_lines})
      string(REGEX REPLACE "^FF_(OLD|SHIM)\\(([A-Za-z0-9_]+).*" "\\2" name "${line}")
      list(APPEND wraps "-Wl,--wrap=${name}")
    endforeach()
    target_sources(${target} PRIVATE ${app}/glibc_floor.cc)
    target_link_options(${target} PRIVATE ${wraps}
      -Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state)
  endif()
  list(JOIN archives " " shown)
  message(STATUS "Portable link of ${target}: the modules' archives, ${shown}")
endfunction()

# After the modules: the portable link of firstfault (FF_PORTABLE) or of firstfault-portable
# beside it (FF_PORTABLE_LINK). FF_PORTABLE_LINK_TARGET names the binary the portable tests
# check (tests/install), FF_PORTABLE_LINK_SKIPPED why there is none.
function(ff_portable_finish)
  set(target)
  set(why)
  if(FF_PORTABLE)
    if(NOT FF_SERVE_FOUND OR NOT FF_PROMETHEUS)
      message(FATAL_ERROR "The portable build has serve and --metrics in: tools/portable-deps first")
    endif()
    set(target firstfault)
  elseif(FF_PORTABLE_LINK STREQUAL "OFF")
    set(why "FF_PORTABLE_LINK=OFF")
  elseif(FF_SANITIZE OR FF_BUILD_FUZZ OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(why "a sanitized or non-GCC build")
  elseif(NOT EXISTS ${FF_PORTABLE_DEPS}/.ready)
    set(why "no static civetweb, prometheus-cpp and fmt in ${FF_PORTABLE_DEPS}: tools/portable-deps makes them (CI runs it)")
  elseif(NOT FF_SERVE_FOUND OR NOT FF_PROMETHEUS)
    set(why "this build has no serve or no --metrics (libcivetweb-dev, prometheus-cpp-dev)")
  else()
    set(target firstfault-portable)
    add_executable(firstfault-portable $<TARGET_OBJECTS:ff_main>)
    set_target_properties(firstfault-portable PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  endif()
  if(why AND FF_PORTABLE_LINK STREQUAL "ON")
    message(FATAL_ERROR "FF_PORTABLE_LINK=ON, but no portable link: ${why}")
  endif()
  if(target)
    ff_portable_link(${target})
  elseif(NOT FF_PORTABLE_LINK STREQUAL "OFF")
    message(STATUS "No firstfault-portable: ${why}")
  endif()
  set(FF_PORTABLE_LINK_TARGET ${target} PARENT_SCOPE)
  set(FF_PORTABLE_LINK_SKIPPED ${why} PARENT_SCOPE)
endfunction()
