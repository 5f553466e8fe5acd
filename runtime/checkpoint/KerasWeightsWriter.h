//===- KerasWeightsWriter.h - Keras' own weights files, written -*- C++ -*-===//
//
// --save-weights, --save-model and --checkpoint-format keras write the files
// Keras reads back, chosen by the file's name (weightsFileFormat):
//
//   *.weights.h5   what Keras 3's model.save_weights writes
//                  (keras/src/saving/saving_lib.py): /vars (the model's
//                  own, named), /layers/<snake_case class>[_k]/vars/<i>
//                  per entry of model.layers (a nested model's layers under
//                  its group's /layers), /optimizer/vars/<i>: iterations,
//                  the learning rate (unless a schedule sets it), then the
//                  slots in the order the optimizer's build() creates them
//                  (Adam: each variable's momentum and velocity in turn, then
//                  AMSGrad's velocity_hat; RMSprop: every velocity, then
//                  every momentum, then every average_gradient; use_ema's
//                  averages and gradient accumulators first);
//   *.h5           the legacy layout tf.keras 2 and Keras 3 load_weights and
//                  load_model read (legacy_h5_format.py, as model.save("m.h5")
//                  writes it): model_config, then /model_weights with
//                  layer_names and /model_weights/<layer>/<layer>/<w>:0;
//                  weights only, no optimizer;
//   *.keras        a zip archive of config.json (the model's config as it
//                  was imported), metadata.json and model.weights.h5 (the
//                  above, optimizer included), which keras.models.load_model
//                  opens and fit() continues from;
//   *.safetensors  our own (Weights.h).
//
// Any other name is an error, never a silent other format. Every variable is
// read through MirroredVariables::read, in Keras' layouts (HWIO kernels),
// float32; `iterations` is int64 as the TensorFlow backend writes it. The
// HDF5 file is built in memory and written atomically (AtomicFile.h): a
// failed write (a full disk) leaves the previous file as it was.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_KERASWEIGHTSWRITER_H
#define RUNTIME_CHECKPOINT_KERASWEIGHTSWRITER_H

#include "runtime/base/Status.h"
#include "runtime/core/MirroredVariables.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <map>
#include <string>

namespace graph::runtime::checkpoint {

enum class WeightsFileFormat {
  safetensors,
  kerasWeights,
  legacyH5,
  kerasModel
};

/// The format `path`'s name asks for; an unknown extension is an error that
/// lists the known ones.
Status weightsFileFormat(const std::string &path, WeightsFileFormat &out);

/// What Keras' files hold besides the variables.
struct KerasModelState {
  /// The plan: its Keras config (Plan.keras_config), optimizer and
  /// variables' trainability.
  const plan::Plan *plan = nullptr;
  /// Optimizer steps taken (Keras' optimizer.iterations).
  int64_t iterations = 0;
  /// The learning rate in effect (ReduceLROnPlateau may have lowered the
  /// plan's); unused when a schedule sets the rate.
  double learningRate = 0;
};

/// Writes the model to `path` in the format its name asks for
/// (weightsFileFormat): safetensors with `metadata` (Weights.h's
/// saveWeights), or a Keras file.
Status saveWeightsFile(const std::string &path,
                       const MirroredVariables &variables,
                       const KerasModelState &state,
                       const std::map<std::string, std::string> &metadata);

/// How Keras 3 lays out the plan's optimizer in /optimizer/vars, for the
/// reader of a Keras file's optimizer state (KerasWeights.h).
struct KerasOptimizerLayout {
  /// The Keras classes of the plan's optimizer ("Adam", "AdamW"), and the
  /// names Keras gives their instances by default ("adam", "adam_w"; a
  /// process's next one "adam_1").
  std::vector<std::string> classes, names;
  /// Whether the learning rate is a variable (index 1; not a schedule).
  bool rateVariable = true;
  /// The plan's slot variables, in Keras' order after iterations and the
  /// rate.
  std::vector<int> slots;
  /// Variables Keras keeps after the slots (Nadam's u_product).
  int trailing = 0;
};
/// The names Keras gives every built-in optimizer by default (its class,
/// snake-cased), whichever the plan's: a file's optimizer of another of
/// these is another optimizer.
const std::vector<std::string> &kerasOptimizerDefaultNames();
/// The plain optimizer's layout; an error when the plan's optimizer has
/// state Keras keeps elsewhere (use_ema's averages, gradient accumulators,
/// a LossScaleOptimizer) or the plan has no Keras config.
Status kerasOptimizerLayout(const MirroredVariables &variables,
                            const plan::Plan &plan, KerasOptimizerLayout &out);

/// Writes the model to `path` as `format` (not safetensors), atomically.
/// Errors name what Keras' layout cannot place (a variable of no layer in
/// the config, a plan without a Keras config).
Status saveKerasFile(const std::string &path, WeightsFileFormat format,
                     const MirroredVariables &variables,
                     const KerasModelState &state);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_KERASWEIGHTSWRITER_H
