//===- Pipeline.h - graphc's pass pipeline ----------------------*- C++ -*-===//

#ifndef COMPILER_PIPELINE_H
#define COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::graphc {

/// 64 GiB: more than any accelerator here holds (an H200 has 141 GB), and
/// far below the runtime's own limit (1 TiB).
inline constexpr int64_t kDefaultMaxArenaBytes = int64_t(64) << 30;

struct PipelineOptions {
  /// Replica counts to compile a program for. Empty: the default set
  /// (1, 2, 4, 8), keeping those that divide the global batch.
  std::vector<int64_t> replicas;
  int64_t bucketBytes = 4 << 20;
  /// Replaces the model's dtype policy (float32, mixed_bfloat16,
  /// mixed_float16); empty keeps the model's own.
  std::string precision;
  bool fuse = true;
  /// Store conv kernels OHWI (graph-assign-filter-layout); off keeps Keras'
  /// HWIO, which the backends then transpose per step (for comparison).
  bool assignFilterLayout = true;
  /// The most bytes one device's arena may take: a bigger plan is refused at
  /// compile time, naming its largest buffer.
  int64_t maxArenaBytes = kDefaultMaxArenaBytes;
  /// Applied to every pass manager the pipeline creates (timing, IR
  /// printing): the tool passes MLIR's command-line options through it.
  std::function<LogicalResult(PassManager &)> configure;
};

/// The default replica counts: a plan compiled with no flag serves
/// `graphrun --gpus N` for each of them without recompiling.
inline const std::vector<int64_t> kDefaultReplicaCounts = {1, 2, 4, 8};

/// Builds the training and evaluation steps of `input` (an imported graph
/// module) and lowers them once per replica count. The result holds the
/// variables, the training configuration and programs @train_x<N> and
/// @eval_x<N>, memory-planned and ready for emitPlan.
FailureOr<OwningOpRef<ModuleOp>>
compileTraining(ModuleOp input, const PipelineOptions &options);

} // namespace mlir::graphc

#endif // COMPILER_PIPELINE_H
