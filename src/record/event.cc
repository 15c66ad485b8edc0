#include "record/event.h"

namespace ff::record {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kPattern: return "pattern";
    case EventKind::kException: return "exception";
    case EventKind::kLauncherFailure: return "launcher-failure";
  }
  return "pattern";
}

}  // namespace ff::record
