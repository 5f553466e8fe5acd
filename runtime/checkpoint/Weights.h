//===- Weights.h - variables to and from safetensors files ------*- C++ -*-===//
//
// A plan's variables are named as Keras names weights ("<layer>/<weight>",
// Keras layouts: HWIO conv kernels, [in, out] dense kernels) and its
// optimizer slots after their variable ("<layer>/<weight>/<slot>"). A
// weights file (graphrun --save-weights / --init-weights) holds the model's
// weights, trainable or not, and no slots; a checkpoint holds every variable.
// Both are safetensors files with one F32 tensor per variable, by name.
//
// Variables are read and written only through MirroredVariables::read() and
// write(), so where a backend keeps them (host or device memory) is its
// business.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_WEIGHTS_H
#define RUNTIME_CHECKPOINT_WEIGHTS_H

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/core/Executor.h"
#include "runtime/core/Status.h"

#include <map>
#include <string>
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
/// tensors: a missing, extra, non-F32 or differently shaped tensor is an
/// error naming it. Nothing is written unless everything matches.
Status setVariables(const SafetensorsFile &file, const std::vector<int> &which,
                    MirroredVariables &variables);

/// --save-weights: the model's weights to `path`, atomically.
Status saveWeights(const std::string &path, const MirroredVariables &variables,
                   const std::map<std::string, std::string> &metadata = {});
/// --init-weights: the model's weights from `path` (slots are untouched).
Status loadWeights(const std::string &path, MirroredVariables &variables);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_WEIGHTS_H
