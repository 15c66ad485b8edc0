/* A fake upstream source for tests/kb_sources/run.py: a message split into adjacent C
 * literals around a format macro. */
#include <inttypes.h>
void warn_alloc(uint64_t n) {
  WARN("Allocation of %" PRIu64 " bytes failed in the "
       "fake transport's buffer pool", n);
}
