//===- IdxReader.h - IDX files (the MNIST format) ---------------*- C++ -*-===//
//
// An IDX file is a big-endian header (two zero bytes, an element type, a rank,
// then one uint32 per dimension) followed by the elements, row-major. MNIST
// and Fashion-MNIST ship their images (rank 3) and labels (rank 1) so, often
// gzipped. Unsigned bytes (type 0x08) are the pixels and labels of every
// dataset published in the format; float32 (type 0x0d, big-endian IEEE) is
// what tools write for images already normalised or features that are not
// pixels. Those two are read; the other types are refused by name.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_IDXREADER_H
#define RUNTIME_DATA_IDXREADER_H

#include "runtime/base/Status.h"
#include "runtime/data/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// The element types readIdxFile takes (the header's third byte).
constexpr uint8_t kIdxUnsignedByte = 0x08;
constexpr uint8_t kIdxFloat32 = 0x0D;

/// The contents of one IDX file of unsigned bytes or float32.
struct IdxArray {
  std::vector<int64_t> dims;
  /// kIdxUnsignedByte (the elements are in `data`) or kIdxFloat32 (in
  /// `floats`); the other vector is empty.
  uint8_t elementType = kIdxUnsignedByte;
  /// The product of dims bytes, row-major (unsigned byte files).
  std::vector<uint8_t> data;
  /// The product of dims floats, row-major, in the host's byte order
  /// (float32 files).
  std::vector<float> floats;
};

/// Reads the IDX file at `path`, gzipped or not (told apart by the gzip
/// magic, not by the name). Fails, naming the file, on a missing file, a
/// wrong magic, an element type other than unsigned byte or float32, a file
/// shorter than its header declares, trailing bytes, or a corrupt gzip
/// stream.
Status readIdxFile(const std::string &path, IdxArray &out);

/// Reads an image file ([N, H, W] for one channel, or [N, H, W, C]) and a
/// label file ([N] unsigned bytes, values in [0, numClasses)) into `out`.
/// Unsigned-byte pixels are scaled from [0, 255] to [0, 1]; float32 images
/// are taken as they are (already scaled by whoever wrote them). `out.name`
/// is the image file's path.
Status loadIdxDataset(const std::string &imagesPath,
                      const std::string &labelsPath, int32_t numClasses,
                      Dataset &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_IDXREADER_H
