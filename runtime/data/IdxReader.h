//===- IdxReader.h - IDX files (the MNIST format) ---------------*- C++ -*-===//
//
// An IDX file is a big-endian header (two zero bytes, an element type, a rank,
// then one uint32 per dimension) followed by the elements, row-major. MNIST
// and Fashion-MNIST ship their images (rank 3) and labels (rank 1) so, often
// gzipped. Only unsigned bytes (type 0x08) are read: those are the pixels and
// labels of every dataset published in the format.
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

/// The contents of one IDX file of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  /// The product of dims bytes, row-major.
  std::vector<uint8_t> data;
};

/// Reads the IDX file at `path`, gzipped or not (told apart by the gzip
/// magic, not by the name). Fails, naming the file, on a missing file, a
/// wrong magic, an element type other than unsigned byte, a file shorter than
/// its header declares, trailing bytes, or a corrupt gzip stream.
Status readIdxFile(const std::string &path, IdxArray &out);

/// Reads an image file ([N, H, W] for one channel, or [N, H, W, C]) and a
/// label file ([N], values in [0, numClasses)) into `out`, pixels scaled from
/// [0, 255] to [0, 1]. `out.name` is the image file's path.
Status loadIdxDataset(const std::string &imagesPath,
                      const std::string &labelsPath, int32_t numClasses,
                      Dataset &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_IDXREADER_H
