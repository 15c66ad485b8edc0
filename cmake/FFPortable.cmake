# FF_PORTABLE=ON (preset `portable`, `make release`): one binary that runs on other Linux
# distributions. Everything but glibc is linked statically: libstdc++ and libgcc
# (-static-libstdc++ -static-libgcc) and the archives (.a) of RE2, Vectorscan (libhs),
# yaml-cpp, libarchive with the compression libraries it and io use (zlib, liblzma,
# libzstd, libbz2, and whichever of libarchive's other dependencies Debian ships as .a),
# and fmt, which Debian ships without an archive, is compiled in header-only. RE2 of
# Debian 12 (2022-06) does not use abseil. tests/install/check-needed fails if the binary
# needs any shared library that is not glibc's.
#
# Included before the find_package calls; ff_portable_finish() runs after them.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)  # find_library, and so the Find modules and pkg-config, take archives
add_link_options(-static-libstdc++ -static-libgcc)

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
  # libarchive.a needs its own dependencies after it (pkg-config --static --libs libarchive).
  ff_portable_static(archive_deps nettle acl lzma zstd lz4 bz2 z xml2)
  set_property(TARGET LibArchive::LibArchive APPEND PROPERTY INTERFACE_LINK_LIBRARIES ${archive_deps})
  foreach(target PkgConfig::RE2 PkgConfig::HS LibArchive::LibArchive)
    if(TARGET ${target})
      get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
      get_target_property(location ${target} IMPORTED_LOCATION)
      message(STATUS "FF_PORTABLE: ${target}: ${location} ${libs}")
    endif()
  endforeach()
endfunction()
