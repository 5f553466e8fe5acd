//===- LogCutBack.cpp - logs cut back to a checkpoint ---------------------===//

#include "runtime/job/LogCutBack.h"

#include <charconv>
#include <filesystem>
#include <fstream>
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

Status cutBackAfterStep(const std::string &path, int64_t step) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::ok();
  uint64_t kept = 0;
  std::string line;
  while (std::getline(in, line)) {
    int64_t lineStep = 0;
    auto [end, ec] =
        std::from_chars(line.data(), line.data() + line.size(), lineStep);
    if (ec != std::errc() || end == line.data() + line.size() || *end != ':')
      return Status::error(path + ": line '" + line.substr(0, 40) +
                           "' does not begin with its step ('17: ...')");
    if (lineStep > step)
      break;
    kept += line.size() + (in.eof() ? 0 : 1);
  }
  in.close();
  return cutBack(path, kept);
}

} // namespace graph::runtime::job
