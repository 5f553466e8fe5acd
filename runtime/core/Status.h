//===- Status.h - the runtime's one error type ------------------*- C++ -*-===//
//
// Runtime functions that can fail return a Status: ok, or a message that
// names the file (or flag, or device), the fault, and what to do. Tools
// print it once and exit non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_STATUS_H
#define RUNTIME_CORE_STATUS_H

#include <string>
#include <utility>

namespace graph::runtime {

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.ok_ = false;
    return s;
  }
  bool isOk() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string &message() const { return message_; }

private:
  bool ok_ = true;
  std::string message_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_STATUS_H
