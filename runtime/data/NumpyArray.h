//===- NumpyArray.h - NumPy's .npy files and .npz archives ------*- C++ -*-===//
//
// Most data a user brings already sits in NumPy arrays, saved with np.save
// (one .npy file) or np.savez / np.savez_compressed (an .npz, a zip of
// NAME.npy members). A .npy file is a magic string, a version, a header that
// is a Python dict literal ({'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }) and the raw elements. The reader takes only numeric
// arrays: an object array's data is a pickle, and unpickling a file runs any
// code it names, so such a file is refused, never loaded.
//
// A .npy file is memory-mapped, not read: a data set larger than the memory
// costs only the pages the pipeline touches, and the rows are converted to
// float32 (or double) as they are asked for, whatever the stored type, byte
// order and memory order, so the file never needs converting first.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_NUMPYARRAY_H
#define RUNTIME_DATA_NUMPYARRAY_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// Which members of an .npz to read, given the names of all of them.
using NpzMemberChoice = std::function<std::vector<std::string>(
    const std::vector<std::string> &names)>;

/// The element types of the arrays the reader takes: NumPy's numeric dtypes
/// (float128 and the complex types excepted) and bool.
enum class ElementType {
  f16,
  f32,
  f64,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  boolean
};

/// NumPy's name of the type: "float16", "float32", "int64", "uint8", "bool",
/// ...
const char *elementTypeName(ElementType type);

/// One NumPy array: its header, and its bytes: memory-mapped (read-only,
/// MAP_SHARED, never copied) from a .npy file, or owned (an .npz member, read
/// and decompressed). Copies share the bytes, which live as long as any copy.
class NumpyArray {
public:
  /// The array's name: an .npz member's name without ".npy" ("x"), or a .npy
  /// file's path.
  const std::string &name() const { return name_; }
  /// For messages: "data.npz: x" or the .npy file's path.
  const std::string &source() const { return source_; }
  ElementType type() const { return type_; }
  /// Empty for a 0-d array.
  const std::vector<int64_t> &shape() const { return shape_; }
  bool fortranOrder() const { return fortranOrder_; }
  /// shape()[0] (0 for a 0-d array).
  int64_t rows() const;
  /// The product of shape()[1:] (1 for rank <= 1).
  int64_t rowElements() const;

  /// Converts rows [first, first + count) to float32 in C (row-major) order,
  /// count * rowElements() floats at `out`, whatever the stored type, byte
  /// order and memory order (Fortran order is a strided gather). Bool is 0/1.
  /// The caller checks the range; a 0-d array's one element is read as
  /// rowsToFloat(0, 1, out). Thread-safe (const, read-only): a parallel map
  /// calls it for one row at a time.
  void rowsToFloat(int64_t first, int64_t count, float *out) const;
  /// The same to double (labels are checked for NaN and integrality through
  /// it).
  void rowsToDouble(int64_t first, int64_t count, double *out) const;

  /// An array in memory the caller owns (a NumPy array handed over by the
  /// Python module): `data` holds the elements of `shape` in the host's
  /// byte order, C order or (`fortranOrder`) Fortran order; `keepAlive`
  /// holds them for as long as any copy of the array lives. Nothing is
  /// copied. `name` is what an .npz member would be called ("x", "y" or an
  /// input's name), `source` what messages begin with.
  static NumpyArray borrow(std::string name, std::string source,
                           ElementType type, std::vector<int64_t> shape,
                           bool fortranOrder, const void *data,
                           std::shared_ptr<const void> keepAlive);

private:
  friend Status openNpy(const std::string &path, NumpyArray &out);
  friend Status openNpz(const std::string &path, std::vector<NumpyArray> &out,
                        const NpzMemberChoice &choose,
                        std::vector<std::string> *names);

  /// Parses the .npy image `bytes` (held alive by `storage`) into `out`.
  /// Errors begin with `source`.
  static Status parse(const uint8_t *bytes, size_t size,
                      std::shared_ptr<const void> storage, std::string name,
                      std::string source, NumpyArray &out);

  template <typename Dst>
  void convertRows(int64_t first, int64_t count, Dst *out) const;

  std::string name_;
  std::string source_;
  ElementType type_ = ElementType::f32;
  std::vector<int64_t> shape_;
  bool fortranOrder_ = false;
  /// The elements' byte order differs from the host's.
  bool swapBytes_ = false;
  /// Keeps the mapping (or the decompressed member) alive.
  std::shared_ptr<const void> storage_;
  /// The first element, inside storage_.
  const uint8_t *data_ = nullptr;
  /// A .npy file's descriptor (kept open) and where its data begin: a few
  /// rows are read with pread(2) rather than through the mapping, so that
  /// the page cache they come from is not counted in this process's
  /// resident memory (a 10 GB file read at random would otherwise count
  /// whole). -1 for an .npz member.
  std::shared_ptr<const int> file_;
  int64_t fileOffset_ = 0;
};

/// Opens a .npy file, mapping its data. Errors name the file and the fault.
Status openNpy(const std::string &path, NumpyArray &out);

/// Opens the members of an .npz archive (np.savez or np.savez_compressed)
/// that `choose` picks from the names of all of them (NAME of NAME.npy),
/// or every member without it, in the archive's order, each read, size-
/// and CRC-checked and decompressed into memory; the others are never read
/// (an array of class names or other metadata beside the data, which may
/// not even be numeric). `names`, if given, gets every member's name.
/// Errors name the archive and the member.
Status openNpz(const std::string &path, std::vector<NumpyArray> &out,
               const NpzMemberChoice &choose = {},
               std::vector<std::string> *names = nullptr);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_NUMPYARRAY_H
