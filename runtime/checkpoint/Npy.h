//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// graphrun --predict writes its predictions as a NumPy array file, which
// np.load reads as is: format 1.0, little-endian float32, C order.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_NPY_H
#define RUNTIME_CHECKPOINT_NPY_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::checkpoint {

/// The bytes of a .npy file holding `values` as float32 of `shape`
/// (row-major); `values` must hold the shape's product.
std::string npyBytes(const std::vector<float> &values,
                     const std::vector<int64_t> &shape);

/// Writes npyBytes(values, shape) to `path`, atomically.
Status writeNpy(const std::string &path, const std::vector<float> &values,
                const std::vector<int64_t> &shape);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_NPY_H
