//===- Weights.h - variables to and from safetensors files ------*- C++ -*-===//
//
// A plan's variables are named as Keras names weights ("<layer>/<weight>",
// Keras layouts: HWIO conv kernels, [in, out] dense kernels) and its
// optimizer slots after their variable ("<layer>/<weight>/<slot>"). A
// weights file (graphrun --save-weights / --init-weights) holds the model's
// weights, trainable or not, and no slots; a checkpoint holds every variable.
// Both are safetensors files with one F32 tensor per variable, by name.
// --init-weights also reads Keras' own weights files (legacy .h5, Keras 3
// .weights.h5, .keras archives: KerasWeights.h), told apart by their first
// bytes, not their names.
//
// Variables are read and written only through MirroredVariables::read() and
// write(), so where a backend keeps them (host or device memory) is its
// business.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_WEIGHTS_H
#define RUNTIME_CHECKPOINT_WEIGHTS_H

#include "runtime/base/Status.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/core/MirroredVariables.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime::checkpoint {

/// Whether variable `v` is an optimizer slot: its name is another
/// variable's name plus "/<slot>".
bool isOptimizerSlot(const MirroredVariables &variables, int v);

/// The model's weights (every variable that is not an optimizer slot).
std::vector<int> modelWeights(const MirroredVariables &variables);
/// Every variable: weights and optimizer slots.
std::vector<int> allVariables(const MirroredVariables &variables);

/// Adds variables `which` to `writer` as F32 tensors under their names.
Status addVariables(const MirroredVariables &variables,
                    const std::vector<int> &which, SafetensorsWriter &writer);

/// Sets variables `which` from `file`, which must hold exactly those
/// tensors besides the ones named in `others` (a checkpoint's
/// ExtraState): a missing, extra, non-F32 or differently shaped tensor is
/// an error naming it. Nothing is written unless everything matches.
Status setVariables(const SafetensorsFile &file, const std::vector<int> &which,
                    MirroredVariables &variables,
                    const std::set<std::string> &others = {});

/// How loadWeights matches a file's weights to the model's.
enum class WeightsMatch {
  /// The file holds exactly the model's weights: a missing, extra or
  /// mis-shaped weight is an error naming it, and nothing is written.
  exact,
  /// Transfer learning, as Keras' load_weights(by_name=True,
  /// skip_mismatch=True): what matches by name and shape is loaded, the
  /// rest of the model keeps its initial values, the rest of the file is
  /// skipped, and the report says exactly which and why.
  partial,
};

/// What loadWeights did, for graphrun to print.
struct WeightsReport {
  /// The file's format: "safetensors", "Keras legacy HDF5", "Keras 3
  /// .weights.h5", "Keras 3 .keras archive".
  std::string format;
  /// The model weights set from the file, in the model's order.
  std::vector<std::string> loaded;
  /// The model weights left at their initial values, each with why.
  std::vector<std::pair<std::string, std::string>> leftInitial;
  /// What the file holds that was not loaded, as the file names it, and why.
  std::vector<std::pair<std::string, std::string>> skipped;

  /// A summary line, then one line per weight left initial or skipped.
  std::string text(const std::string &path) const;
};

/// --save-weights: the model's weights to `path`, atomically.
Status saveWeights(const std::string &path, const MirroredVariables &variables,
                   const std::map<std::string, std::string> &metadata = {});
/// --init-weights: the model's weights from `path` (slots are untouched): a
/// safetensors file or a Keras weights file (KerasWeights.h), by content.
/// `report`, when given, receives what was loaded and what was not.
Status loadWeights(const std::string &path, MirroredVariables &variables,
                   WeightsMatch match = WeightsMatch::exact,
                   WeightsReport *report = nullptr);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_WEIGHTS_H
