//===- Status.h - the runtime's one error type ------------------*- C++ -*-===//
//
// Runtime functions that can fail return a Status: ok, or a message that
// names the file (or flag, or device), the fault, and what to do. Tools
// print it once and exit non-zero.
//
// It sits at the base of the runtime (IREE's iree/base/status.h), so every
// runtime folder may use it and none has to include a higher floor for it.
// A Status also carries a small code, so that a caller can branch on the
// kind of failure (a collective that timed out, a file that is missing)
// without parsing the message; the message stays the user's.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_STATUS_H
#define RUNTIME_BASE_STATUS_H

#include <string>
#include <utility>

namespace graph::runtime {

/// What kind of failure a Status is: absl's and IREE's codes, the few the
/// runtime tells apart.
enum class StatusCode {
  ok,
  /// A failure nobody classified: most of the runtime's, for now.
  unknown,
  /// The input (a file, a flag, a plan, data) is not what it must be.
  invalidInput,
  /// A file, a name or a device that was asked for does not exist.
  notFound,
  /// Memory, disk or devices ran out.
  resourceExhausted,
  /// A bug or a broken invariant of ours, never the user's input.
  internal,
  /// A wait ran past its limit (a late replica, a hung device).
  timeout,
  /// The work was stopped on purpose (a signal, a hook, another failure).
  cancelled,
};

/// The code's name, for messages and tests: "invalid input", "timeout".
inline const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::ok:
    return "ok";
  case StatusCode::unknown:
    return "unknown";
  case StatusCode::invalidInput:
    return "invalid input";
  case StatusCode::notFound:
    return "not found";
  case StatusCode::resourceExhausted:
    return "resource exhausted";
  case StatusCode::internal:
    return "internal";
  case StatusCode::timeout:
    return "timeout";
  case StatusCode::cancelled:
    return "cancelled";
  }
  return "unknown";
}

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  /// A failure of kind `code` (not ok).
  static Status error(StatusCode code, std::string message) {
    Status s;
    s.code_ = code == StatusCode::ok ? StatusCode::unknown : code;
    s.message_ = std::move(message);
    return s;
  }
  static Status error(std::string message) {
    return error(StatusCode::unknown, std::move(message));
  }
  static Status invalidInput(std::string message) {
    return error(StatusCode::invalidInput, std::move(message));
  }
  static Status notFound(std::string message) {
    return error(StatusCode::notFound, std::move(message));
  }
  static Status resourceExhausted(std::string message) {
    return error(StatusCode::resourceExhausted, std::move(message));
  }
  static Status internal(std::string message) {
    return error(StatusCode::internal, std::move(message));
  }
  static Status timeout(std::string message) {
    return error(StatusCode::timeout, std::move(message));
  }
  static Status cancelled(std::string message) {
    return error(StatusCode::cancelled, std::move(message));
  }

  bool isOk() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// The same failure with `context` before its message ("file.npz: " +
  /// message), keeping its code; ok stays ok.
  Status withContext(const std::string &context) const {
    if (isOk())
      return *this;
    return error(code_, context + message_);
  }

private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

} // namespace graph::runtime

#endif // RUNTIME_BASE_STATUS_H
