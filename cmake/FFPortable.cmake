# FF_PORTABLE=ON (preset `portable`, `make release`): one binary that runs on other Linux
# distributions. Everything but glibc is linked statically: libstdc++ and libgcc
# (-static-libstdc++ -static-libgcc) and the archives (.a) of RE2, Vectorscan (libhs),
# yaml-cpp, libarchive with the compression libraries it and io use (zlib, liblzma,
# libzstd, libbz2, and whichever of libarchive's other dependencies Debian ships as .a),
# and fmt, which Debian ships without an archive, is compiled in header-only. RE2 of
# Debian 12 (2022-06) does not use abseil. tools/release-check (the portable_glibc_floor
# test) fails if the binary needs any shared library that is not glibc's or a glibc
# version newer than 2.28.
#
# serve and --metrics: civetweb and prometheus-cpp (core, pull), which Debian ships as
# shared libraries only, as static archives built from Debian's source packages by
# tools/portable-deps into FF_PORTABLE_DEPS (the portable preset asks for both: a build
# without them fails rather than leaving them out).
#
# The glibc floor (FF_GLIBC_FLOOR, on by default): src/app/glibc_floor.cc and the
# --wrap options of its list (glibc_floor.def), so that the binary linked against Debian
# 12's glibc 2.36 asks for no symbol newer than GLIBC_2.28; tools/release-check proves it.
#
# Included before the find_package calls; ff_portable_finish() runs after them.
set(FF_PORTABLE_DEPS ${PROJECT_SOURCE_DIR}/build-portable-deps/prefix CACHE PATH
    "Static civetweb and prometheus-cpp for the portable build (tools/portable-deps)")
option(FF_GLIBC_FLOOR "Portable build: no glibc symbol newer than GLIBC_2.28 (src/app/glibc_floor.cc)" ON)
list(PREPEND CMAKE_PREFIX_PATH ${FF_PORTABLE_DEPS})
set(FF_PORTABLE_FIND NO_DEFAULT_PATH PATHS ${FF_PORTABLE_DEPS})  # never the shared ones
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)  # find_library, and so the Find modules and pkg-config, take archives
add_link_options(-static-libstdc++ -static-libgcc)
# No RPATH, not even in the build tree: the binary is copied to other machines. (A cross
# build's library folders are not the compiler's implicit ones, so CMake would otherwise
# write the sysroot's into the binary: tools/release-check refuses it.)
set(CMAKE_SKIP_RPATH ON)

# fmt: Debian's libfmt-dev has libfmt.so only; the header-only mode compiles it in.
find_library(FF_FMT_ARCHIVE NAMES fmt)
find_path(FF_FMT_INCLUDE fmt/format.h REQUIRED)
add_library(fmt::fmt INTERFACE IMPORTED GLOBAL)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${FF_FMT_INCLUDE})
if(FF_FMT_ARCHIVE)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_LINK_LIBRARIES ${FF_FMT_ARCHIVE})
else()
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endif()

# ff_portable_static(<var> <name>...): the archive lib<name>.a of each name, in order;
# a name with no archive is left out with a note (the link then fails if it was needed).
function(ff_portable_static var)
  set(out)
  foreach(name ${ARGN})
    find_library(FF_STATIC_${name} NAMES ${name})
    if(FF_STATIC_${name})
      list(APPEND out ${FF_STATIC_${name}})
    else()
      message(STATUS "FF_PORTABLE: no lib${name}.a; not linked (only needed for formats firstfault does not read)")
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
endfunction()

function(ff_portable_finish)
  # yaml-cpp's package config names its shared library: point the target at the archive.
  find_library(FF_YAML_CPP_ARCHIVE NAMES yaml-cpp REQUIRED)
  get_target_property(configs yaml-cpp IMPORTED_CONFIGURATIONS)
  foreach(config ${configs})
    set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION_${config} ${FF_YAML_CPP_ARCHIVE})
  endforeach()
  set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION ${FF_YAML_CPP_ARCHIVE})
  # libarchive.a needs its own dependencies after it (pkg-config --static --libs libarchive),
  # but for libxml2, which only its XAR reader and writer use: firstfault enables tar, raw and
  # bzip2 only (io.archive.cc, io.codecs.cc, bundle.cc), so those objects stay out of the
  # link, and libxml2.a, given, would need ICU, which is not (issue 35).
  # (Enabling those formats alone is not enough: the pax writer's one helper sits beside
  # the table of every writer; src/app/archive_static.cc defines it, so that object stays out.)
  ff_portable_static(archive_deps nettle acl lzma zstd lz4 bz2 z)
  set_property(TARGET LibArchive::LibArchive APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${archive_deps})
  target_sources(firstfault PRIVATE ${PROJECT_SOURCE_DIR}/src/app/archive_static.cc)
  if(FF_GLIBC_FLOOR)
    # glibc_floor.def's names, each wrapped; libpthread and libdl stay NEEDED, where glibc
    # before 2.34 keeps the pthread and dl functions (stubs in 2.34 and later).
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${PROJECT_SOURCE_DIR}/src/app/glibc_floor.def)
    file(STRINGS ${PROJECT_SOURCE_DIR}/src/app/glibc_floor.def floor_lines REGEX "^FF_(OLD|SHIM)\\(")
    set(wraps)
    foreach(line ${floor_lines})
      string(REGEX REPLACE "^FF_(OLD|SHIM)\\(([A-Za-z0-9_]+).*" "\\2" name "${line}")
      list(APPEND wraps "-Wl,--wrap=${name}")
    endforeach()
    target_sources(firstfault PRIVATE ${PROJECT_SOURCE_DIR}/src/app/glibc_floor.cc)
    target_link_options(firstfault PRIVATE ${wraps}
      -Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state)
  endif()
  foreach(target PkgConfig::RE2 PkgConfig::HS LibArchive::LibArchive)
    if(TARGET ${target})
      get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
      get_target_property(location ${target} IMPORTED_LOCATION)
      message(STATUS "FF_PORTABLE: ${target}: ${location} ${libs}")
    endif()
  endforeach()
endfunction()
