//===- FashionMnist.h - the Fashion-MNIST dataset ---------------*- C++ -*-===//
//
// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 28x28 grey images of
// clothing in 10 classes, 60000 to train on and 10000 to test, as four IDX
// files in one directory, gzipped or not. Debian's dataset-fashion-mnist
// installs them, gzipped, in kFashionMnistDefaultDir. MNIST's digits come in
// the same four files and load the same way.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_FASHIONMNIST_H
#define RUNTIME_DATA_FASHIONMNIST_H

#include "runtime/base/Status.h"
#include "runtime/data/Dataset.h"

#include <array>
#include <string>

namespace graph::runtime::data {

inline constexpr const char *kFashionMnistDefaultDir =
    "/usr/share/datasets/fashion-mnist";
inline constexpr int32_t kFashionMnistClasses = 10;

enum class FashionMnistSplit { Train, Test };

/// The class names in label order: 0 is "T-shirt/top", 9 is "Ankle boot".
const std::array<const char *, kFashionMnistClasses> &fashionMnistClassNames();

/// Loads one split from `directory`: <prefix>-images-idx3-ubyte and
/// <prefix>-labels-idx1-ubyte, each with or without ".gz" (the gzipped file
/// is taken when both exist), where prefix is "train" or "t10k".
Status loadFashionMnist(const std::string &directory, FashionMnistSplit split,
                        Dataset &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_FASHIONMNIST_H
