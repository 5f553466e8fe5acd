//===- Crc32c.h - CRC-32C, the Castagnoli checksum --------------*- C++ -*-===//
//
// The checksum of TensorBoard's TFRecord framing and of plan files: CRC-32C
// (reflected polynomial 0x82F63B78), which catches every error of up to
// 32 bits in a row and every 1-, 2- and 3-bit error in the lengths we use.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_CRC32C_H
#define RUNTIME_BASE_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace graph::runtime {

/// CRC-32C of `bytes` bytes, continuing `crc` (the CRC of what came
/// before; 0 to start).
uint32_t crc32c(const void *data, size_t bytes, uint32_t crc = 0);

} // namespace graph::runtime

#endif // RUNTIME_BASE_CRC32C_H
