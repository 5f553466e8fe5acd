//===- KerasWeights.h - Keras' own weights files, read ----------*- C++ -*-===//
//
// --init-weights reads the weights files Keras writes, besides safetensors
// (Weights.h dispatches on the file's first bytes). Three layouts, all HDF5:
//
// Legacy HDF5 (tf.keras 2 `model.save_weights("w.h5")`, Keras 3's
// legacy_h5_format, keras.applications files such as
// vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5):
//
//   /                 attrs layer_names = [b"block1_conv1", ...], backend,
//                     keras_version (a list too long for one attribute is
//                     split into layer_names0, layer_names1, ...)
//   /block1_conv1     attr weight_names = [b"block1_conv1/kernel:0", ...]
//   /block1_conv1/block1_conv1/kernel:0   a dataset at each weight name
//
//   Weight names vary with the Keras that wrote them (a model-name prefix,
//   "_1" suffixes, Keras 1's "block1_conv1_W_1:0"); as Keras does, they
//   only locate the datasets, which match the layer's weights by position.
//   A whole-model `model.save("m.h5")` holds the same under /model_weights.
//
// Keras 3 (`model.save_weights("m.weights.h5")`, and the model.weights.h5
// member of a `.keras` zip archive, keras/src/saving/saving_lib.py):
//
//   /layers/conv2d/vars          attr name = "block1_conv1" (the layer's)
//   /layers/conv2d/vars/0, 1     the layer's variables, in Layer.weights order
//   /layers/batch_normalization/vars/0..3   gamma, beta, moving_mean, ...
//   /optimizer/vars/...          a .keras archive's optimizer state (ignored)
//
//   Groups are named after the layer's class ("conv2d", "conv2d_1", ... in
//   model.layers order), not after the layer; Keras 3.15 records the
//   layer's name in the `name` attribute of `vars`, which is what matches.
//   A file written before Keras recorded it is matched through the
//   archive's config.json (Keras' own naming rule replayed over its layer
//   list); a bare .weights.h5 without names cannot be matched by name, and
//   loading it says so. tf.keras 2.13-2.15 `.keras` files use
//   /_layer_checkpoint_dependencies for /layers and read the same way.
//
// Matching is by layer name, then by position within the layer: a model
// variable "<layer>/<weight>" takes the file layer's weight at the
// position Keras gives <weight> in Layer.weights (kernel, bias; gamma,
// beta, moving_mean, moving_variance). float32 is read as is; float64,
// float16 and Keras' bfloat16 are converted; any other type is refused.
//
// The real VGG16 file is never downloaded by us: after any
// `keras.applications.VGG16(include_top=False)` Keras keeps it in
// ~/.keras/models/vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5, and a
// model imported from VGG16's config loads it (partially, when the model
// adds its own head: WeightsMatch::partial).
//
// HDF5 files are untrusted input: soft and external links, external and
// virtual dataset storage and filter plugins are refused (a weights file
// must be self-contained), HDF5's error printing is silenced and its
// messages come back in a Status naming the file and the object, and no
// dataset is read unless its shape is the model variable's. A .keras member
// is read as the Keras importer reads config.json: at most
// kMaxWeightsMemberBytes, checked against the size and CRC-32 the archive
// declares. libhdf5 is not thread-safe: one load at a time per process.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_KERASWEIGHTS_H
#define RUNTIME_CHECKPOINT_KERASWEIGHTS_H

#include "runtime/base/Status.h"
#include "runtime/base/ZipArchive.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/core/MirroredVariables.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime::checkpoint {

/// The most of a .keras archive's model.weights.h5 read into memory (VGG16
/// with its head is 528 MiB); a member declaring more is refused unread.
inline constexpr uint64_t kMaxWeightsMemberBytes = uint64_t(8) << 30;

/// The member of a .keras archive that holds the weights.
inline constexpr const char *kKerasWeightsMember = "model.weights.h5";

/// True if `head` (a file's first bytes) begins with HDF5's signature.
bool looksLikeHdf5(std::string_view head);
// looksLikeZip (a .keras file is a zip archive): runtime/base/ZipArchive.h.

/// Sets the model weights `which` from the Keras weights file `path`: an
/// HDF5 file (legacy or Keras 3 layout), or with `archive` a .keras zip
/// archive's model.weights.h5. Errors name the file and the object; with
/// WeightsMatch::exact nothing is written unless every weight matches.
Status loadKerasWeights(const std::string &path, bool archive,
                        const std::vector<int> &which,
                        MirroredVariables &variables, WeightsMatch match,
                        WeightsReport *report);

/// What loadKerasOptimizer found.
struct KerasOptimizerReport {
  /// The file holds /optimizer/vars (a `.keras` archive or a Keras 3
  /// `.weights.h5` written with the optimizer built).
  bool present = false;
  /// The slots were set; otherwise `why` says why not.
  bool loaded = false;
  std::string why;
  /// Keras' optimizer.iterations, and the rate it saved (unset for a
  /// schedule).
  int64_t iterations = 0;
  std::optional<float> learningRate;
};

/// Sets the plan's optimizer slots from a Keras 3 file's /optimizer/vars
/// (`archive`: a .keras zip archive's model.weights.h5), as Keras'
/// load_model restores the optimizer for fit() to go on: iterations, the
/// rate, then each slot in the order Keras' build() creates them
/// (KerasWeightsWriter.h's kerasOptimizerLayout). A file without the group,
/// or whose optimizer is not the plan's (another number of variables, or
/// the name Keras gives another class by default), leaves the slots alone
/// and says why in `report`; a slot of another shape, or an unreadable
/// one, is an error. Nothing is written unless every slot reads.
Status loadKerasOptimizer(const std::string &path, bool archive,
                          const plan::Plan &plan, MirroredVariables &variables,
                          KerasOptimizerReport &report);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_KERASWEIGHTS_H
