# `make install` / `cmake --install` and the Debian package (CPack): the binary, the man
# page and the bash, zsh and fish completions (all three made at build time from the
# binary itself, so they describe exactly the command that is installed), and the docs.
#
#   bin/firstfault
#   share/man/man1/firstfault.1                      tools/gen-manpage over every --help
#   share/bash-completion/completions/firstfault     firstfault completions bash
#   share/zsh/site-functions/_firstfault             firstfault completions zsh
#   share/fish/vendor_completions.d/firstfault.fish  firstfault completions fish
#   share/doc/firstfault/{README.md,ARCHITECTURE.md,docs/}
include(GNUInstallDirs)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/share)
set(FF_MANPAGE ${PROJECT_BINARY_DIR}/share/firstfault.1)
# A cross build (preset portable-arm64) runs its binary here under CMAKE_CROSSCOMPILING_EMULATOR
# (qemu-aarch64-static): CMake puts it before `firstfault` in the completions' commands;
# gen-manpage is given it.
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(FATAL_ERROR "A cross build writes its man page and completions by running firstfault: "
                      "it needs qemu-user-static (tools/install-deps --release)")
endif()
add_custom_command(OUTPUT ${FF_MANPAGE}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/gen-manpage
          ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:firstfault> ${FF_MANPAGE}
  DEPENDS firstfault ${PROJECT_SOURCE_DIR}/tools/gen-manpage
  COMMENT "Writing the man page from firstfault --help"
  VERBATIM)
set(FF_COMPLETIONS)
foreach(shell bash zsh fish)
  set(out ${PROJECT_BINARY_DIR}/share/firstfault.${shell})
  add_custom_command(OUTPUT ${out}
    COMMAND firstfault completions ${shell} -o ${out}
    DEPENDS firstfault
    COMMENT "Writing the ${shell} completion"
    VERBATIM)
  list(APPEND FF_COMPLETIONS ${out})
endforeach()
add_custom_target(ff_shell_files ALL DEPENDS ${FF_MANPAGE} ${FF_COMPLETIONS})

install(TARGETS firstfault RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${FF_MANPAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_BINARY_DIR}/share/firstfault.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME firstfault)
install(FILES ${PROJECT_BINARY_DIR}/share/firstfault.zsh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions RENAME _firstfault)
install(FILES ${PROJECT_BINARY_DIR}/share/firstfault.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/ARCHITECTURE.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# The Debian package: `make deb` (from the portable build), or `cpack -G DEB` in a build
# folder. The same files as `make install`, under /usr. Its Depends come from
# dpkg-shlibdeps over the binary: libc6 only for the portable build.
set(FF_PACKAGE_MAINTAINER "firstfault maintainers <firstfault@example.invalid>"
    CACHE STRING "Maintainer field of the Debian package: Name <email>")
set(CPACK_PACKAGE_NAME firstfault)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "firstfault")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "why did my ML training job die? first failure, root cause and fix from its logs")
set(CPACK_PACKAGE_DESCRIPTION
    "firstfault reads the logs of a PyTorch, DeepSpeed, Megatron-LM, Hugging Face, Lightning or vLLM job (files, folders, gzip/zstd/xz, tar bundles, stdin) and names the failure that happened first, on which rank and node, what is only collateral, the root cause, the fix and how to verify it, fully offline, from a knowledge base embedded in the binary.")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${FF_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(FF_PORTABLE AND FF_GLIBC_FLOOR)
  # dpkg-shlibdeps would say libc6 (>= 2.34): its symbols file dates pthread_create@GLIBC_2.2.5
  # and its kin from 2.34, when they moved into libc.so.6, but on an older glibc the binary
  # finds them in libpthread.so.0, which it keeps NEEDED (src/app/glibc_floor.cc). The floor
  # that tools/release-check proves is the dependency.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.28)")
endif()
# A cross build's packages are for its target, not this machine (CPack asks dpkg and uname):
# the arm64 portable build (preset portable-arm64) makes an arm64 .deb and an aarch64 .rpm.
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  set(CPACK_RPM_PACKAGE_ARCHITECTURE aarch64)
endif()
set(CPACK_STRIP_FILES ON)  # with CMAKE_STRIP: the cross toolchain's for a cross build
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The RPM for RHEL-family clusters: `make rpm` (from the portable build), or `cpack -G RPM`
# (rpmbuild: Debian's rpm package). The same files; its Requires are rpmbuild's own reading
# of the binary (libc.so.6 and its versions: the portable binary's glibc floor).
set(CPACK_RPM_PACKAGE_LICENSE "Proprietary")
set(CPACK_RPM_PACKAGE_GROUP "Development/Tools")
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_RELEASE 1)
# Folders other packages own (man, bash-completion, zsh, fish, the doc root): not claimed.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /usr/share/man /usr/share/man/man1 /usr/share/bash-completion /usr/share/bash-completion/completions /usr/share/zsh
    /usr/share/zsh/site-functions /usr/share/fish /usr/share/fish/vendor_completions.d /usr/share/doc)
include(CPack)
