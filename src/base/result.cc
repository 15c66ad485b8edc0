#include "base/result.h"

namespace ff {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kPermission: return "permission denied";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kFormat: return "format error";
    case ErrorCode::kTruncated: return "truncated";
    case ErrorCode::kInvalidKb: return "invalid knowledge base";
    case ErrorCode::kInvalidArg: return "invalid argument";
    case ErrorCode::kLimit: return "limit exceeded";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

std::string Error::to_string() const {
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0) out += ":" + std::to_string(where.line);
    out += ": ";
  }
  if (!where.field.empty()) out += where.field + ": ";
  out += message;
  return out;
}

}  // namespace ff
