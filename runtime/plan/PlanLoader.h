//===- PlanLoader.h - reading and checking plan files -----------*- C++ -*-===//
//
// The runtime trusts no plan: a plan file ends with a checksum of all its
// bytes, which loadPlan checks first (a flipped value that leaves the
// structure valid would otherwise train another model); then the
// FlatBuffers verifier checks the buffer's structure, and checkPlan its
// meaning (indices in range, buffers inside their arenas, events recorded
// before they are awaited) before anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_PLAN_PLANLOADER_H
#define RUNTIME_PLAN_PLANLOADER_H

#include "runtime/base/Status.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime {

/// The version this build writes and reads. Bump it when plan.fbs changes
/// meaning.
constexpr uint32_t kPlanVersion = 8;

/// Whether `name` is a labels input: "labels", or "labels:<output>" for
/// each output of a model of several.
inline bool isLabelsInput(std::string_view name) {
  return name == "labels" || name.starts_with("labels:");
}

/// Whether `name` is an input graph-build-training-step adds to the model's:
/// the labels, and each row's weights in the loss and in the metrics.
inline bool isStepInput(std::string_view name) {
  return isLabelsInput(name) || name == "sample_weight" ||
         name == "metric_weight";
}

/// Whether the plan's loss compares predictions with float targets of their
/// shape (binary cross-entropy, mean squared error, ...), rather than with
/// class labels: its "labels" input then takes each example's targets.
inline bool takesTargets(const plan::Plan &plan) {
  return plan.training() &&
         plan.training()->loss() != plan::LossKind::categorical_crossentropy &&
         plan.training()->loss() !=
             plan::LossKind::sparse_categorical_crossentropy;
}

/// A plan file held in memory; `plan` points into `bytes`.
struct LoadedPlan {
  std::string path;
  std::vector<uint8_t> bytes;
  const plan::Plan *plan = nullptr;
};

/// The training's hyper-parameter `name` (Training.hyper_parameters: the
/// optimizer's by their Keras names, and lr_schedule, use_ema, ...) as a
/// number, or `fallback` when the plan has none of that name.
double trainingHyperParameter(const plan::Plan &plan, std::string_view name,
                              double fallback);

/// A plan file's last 8 bytes: kPlanTrailerMagic, then the CRC-32C
/// (little-endian) of every byte before the trailer.
inline constexpr char kPlanTrailerMagic[4] = {'G', 'P', 'L', 'C'};
inline constexpr size_t kPlanTrailerBytes = 8;
/// Appends the trailer to a plan's FlatBuffers bytes (graphc's last step).
void appendPlanChecksum(std::vector<uint8_t> &bytes);

/// Reads `path`, checks its checksum, verifies and checks the plan; a plan
/// whose bytes changed after graphc wrote it is refused, naming the file.
Status loadPlan(const std::string &path, LoadedPlan &out);

/// Verifies and checks a plan in memory; `name` is used in messages.
Status verifyPlan(const uint8_t *data, size_t size, const std::string &name,
                  const plan::Plan *&out);

/// Whether `name` is the optimizer's: slots are named "<variable>/<slot>"
/// (conv2d/kernel/m), so a name whose part before its last '/' names a
/// variable (`isVariable(prefix)`) is one; the optimizer's own state
/// (dynamic loss scaling's optimizer/dynamic_scale, ...) starts with
/// "optimizer/". Weights files and parameter counts leave them out.
template <typename IsVariable>
bool isOptimizerSlotName(std::string_view name, IsVariable &&isVariable) {
  if (name.starts_with("optimizer/"))
    return true;
  size_t slash = name.rfind('/');
  return slash != std::string_view::npos && isVariable(name.substr(0, slash));
}

/// The largest tensor a plan may hold, in bytes: more than any device
/// holds, and far enough below 2^63 that the runtime's byte arithmetic
/// (offsets, sums of buffers) cannot overflow once a plan is checked.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;

/// Bytes of one element of `dtype`.
size_t dtypeBytes(plan::DType dtype);
/// Elements in a buffer of `shape`; unchecked, for shapes of a checked plan
/// (every one has at most kMaxTensorBytes).
int64_t elementCount(const flatbuffers::Vector<int64_t> *shape);

} // namespace graph::runtime

#endif // RUNTIME_PLAN_PLANLOADER_H
