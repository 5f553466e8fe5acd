//===- LogCutBack.cpp - logs cut back to a checkpoint ---------------------===//

#include "runtime/job/LogCutBack.h"

#include <filesystem>
#include <system_error>

namespace graph::runtime::job {

namespace fs = std::filesystem;

std::string absolutePath(const std::string &path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

Status cutBack(const std::string &path, uint64_t bytes) {
  std::error_code ec;
  uintmax_t now = fs::file_size(path, ec);
  if (ec || now <= bytes)
    return Status::ok();
  fs::resize_file(path, bytes, ec);
  if (ec)
    return Status::error(path + ": cannot cut it back to the checkpoint's " +
                         std::to_string(bytes) + " bytes: " + ec.message());
  return Status::ok();
}

} // namespace graph::runtime::job
