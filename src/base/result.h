// base/result.h — the error model used at every module boundary.
//
// Functions that can fail return Result<T> (a value or an Error) or Status (an Error or
// nothing). Both are [[nodiscard]]. Exceptions never cross a module's public functions.
//
//   Result<int> parse(std::string_view s);
//   FF_TRY(auto n, parse(text));   // returns the Error to the caller on failure
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ff {

enum class ErrorCode {
  kNotFound,
  kPermission,
  kIo,
  kFormat,      // input that is not what it claims to be (bad gzip, binary file)
  kTruncated,   // input that ends early (truncated archive)
  kInvalidKb,   // a knowledge-base entry that does not validate
  kInvalidArg,  // a user mistake on the command line
  kLimit,       // a bound was hit (tar bomb, line too long)
  kInternal,
};

const char* error_code_name(ErrorCode code);

// Where an error happened: a file, and optionally a line and a field inside it.
struct Location {
  std::string file;
  int line = 0;       // 1-based, 0 when unknown
  std::string field;  // e.g. "patterns[2].regex"
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  Location where;

  // "file:line: field: message" with the parts that are known.
  std::string to_string() const;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }
  Error&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : e_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return {}; }
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

inline Error make_error(ErrorCode code, std::string message, Location where = {}) {
  return Error{code, std::move(message), std::move(where)};
}

}  // namespace ff

#define FF_CONCAT_INNER(a, b) a##b
#define FF_CONCAT(a, b) FF_CONCAT_INNER(a, b)
#define FF_TRY_IMPL(tmp, decl, expr)      \
  auto tmp = (expr);                      \
  if (!tmp.ok()) return tmp.take_error(); \
  decl = std::move(tmp).value()
// FF_TRY(auto x, f()): bind the value of f() or return its Error.
#define FF_TRY(decl, expr) FF_TRY_IMPL(FF_CONCAT(ff_try_, __LINE__), decl, expr)

// FF_ASSERT: a programmer error; must be impossible to trigger from input.
#ifdef NDEBUG
#define FF_ASSERT(cond) ((void)0)
#else
#include <cassert>
#define FF_ASSERT(cond) assert(cond)
#endif
