//===- Crc32c.cpp - CRC-32C, the Castagnoli checksum ----------------------===//

#include "runtime/base/Crc32c.h"

#include <array>

namespace graph::runtime {

namespace {

constexpr std::array<uint32_t, 256> makeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32cTable = makeCrc32cTable();

} // namespace

uint32_t crc32c(const void *data, size_t bytes, uint32_t crc) {
  const auto *p = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i)
    crc = kCrc32cTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

} // namespace graph::runtime
