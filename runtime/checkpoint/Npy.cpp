//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/checkpoint/Npy.h"

#include "runtime/base/AtomicFile.h"

#include <cstring>

namespace graph::runtime::checkpoint {

std::string npyBytes(const std::vector<float> &values,
                     const std::vector<int64_t> &shape) {
  // The header is a Python dict literal; a 1-tuple needs its comma.
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  else if (shape.size() == 1)
    dims.resize(dims.size() - 1);
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2) + header, padded with
  // spaces to a multiple of 64 bytes and ended by a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  uint16_t length = static_cast<uint16_t>(header.size());
  out += static_cast<char>(length & 0xff);
  out += static_cast<char>(length >> 8);
  out += header;
  size_t offset = out.size();
  out.resize(offset + values.size() * sizeof(float));
  // float32 little-endian: the host's layout on every machine we build for.
  std::memcpy(out.data() + offset, values.data(),
              values.size() * sizeof(float));
  return out;
}

Status writeNpy(const std::string &path, const std::vector<float> &values,
                const std::vector<int64_t> &shape) {
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  if (elements != static_cast<int64_t>(values.size()))
    return Status::error(path + ": " + std::to_string(values.size()) +
                         " values for a shape of " + std::to_string(elements));
  return writeFileAtomically(path, npyBytes(values, shape));
}

} // namespace graph::runtime::checkpoint
