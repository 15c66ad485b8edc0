// The build's kind for --version (shell.h): on its own in this file, so that a portable link
// of a normal build's objects (firstfault-portable, cmake/FFPortable.cmake) can compile it
// again with FF_PORTABLE_BUILD=1 and link that object in place of this module's. It includes
// nothing of the project's: that second compile has no module's include folders.

#ifndef FF_BUILD_TYPE
#define FF_BUILD_TYPE "unknown"
#endif
#ifndef FF_PORTABLE_BUILD
#define FF_PORTABLE_BUILD 0
#endif

namespace ff::app {

const char* build_kind();

const char* build_kind() {
  return FF_PORTABLE_BUILD ? FF_BUILD_TYPE ", portable (static, needs only glibc)" : FF_BUILD_TYPE;
}

}  // namespace ff::app
