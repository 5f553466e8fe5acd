//===- Pipeline.cpp - graphc's pass pipeline ------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/Passes.h"

#include "runtime/plan/PlanLoader.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::graphc;

/// Refuses a tensor larger than a plan may hold (the runtime's
/// kMaxTensorBytes), before the passes do arithmetic on its size: a Dense
/// layer of 2^62 units made the memory planner's byte counts wrap round.
static LogicalResult checkTensorSizes(ModuleOp module) {
  constexpr int64_t limit = ::graph::runtime::kMaxTensorBytes;
  auto check = [&](Operation *op, Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasStaticShape() ||
        !shaped.getElementType().isIntOrFloat())
      return success();
    int64_t bytes = std::max<int64_t>(
        1, shaped.getElementType().getIntOrFloatBitWidth() / 8);
    for (int64_t d : shaped.getShape())
      if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > limit)
        return op->emitError() << type << " is larger than a plan may hold ("
                               << (limit >> 30) << " GiB a tensor)",
               failure();
    return success();
  };
  WalkResult walk = module->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (failed(check(op, type)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Type type : block.getArgumentTypes())
          if (failed(check(op, type)))
            return WalkResult::interrupt();
    // A variable's type is an attribute.
    WalkResult attrs = op->getAttrDictionary().walk([&](Type type) {
      return failed(check(op, type)) ? WalkResult::interrupt()
                                     : WalkResult::advance();
    });
    return attrs;
  });
  return failure(walk.wasInterrupted());
}

static LogicalResult runPasses(ModuleOp module, const PipelineOptions &options,
                               llvm::function_ref<void(OpPassManager &)> add) {
  PassManager pm(module.getContext());
  if (options.configure && failed(options.configure(pm)))
    return failure();
  add(pm);
  return pm.run(module);
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::graphc::compileTraining(ModuleOp input, const PipelineOptions &options) {
  auto trainings = llvm::to_vector(input.getOps<graph::TrainingOp>());
  // At the module's location, not on the module op: an op's diagnostic
  // prints the op, and this one is the whole model.
  if (trainings.empty())
    return mlir::emitError(input.getLoc(),
                           "graphc needs one graph.training op (the loss, "
                           "optimizer and batch), and the module has none: "
                           "Keras' to_json() does not record compile(), so "
                           "import the model with --loss (and --optimizer)"),
           failure();
  if (trainings.size() != 1)
    return mlir::emitError(trainings[1].getLoc(),
                           "graphc needs one graph.training op, and this is "
                           "the second")
                   .attachNote(trainings[0].getLoc())
               << "the first",
           failure();
  int64_t batch = trainings.front().getGlobalBatchSize();
  if (failed(checkTensorSizes(input)))
    return failure();

  std::vector<int64_t> counts = options.replicas;
  if (counts.empty()) {
    for (int64_t n : kDefaultReplicaCounts) {
      if (batch % n == 0)
        counts.push_back(n);
      else
        emitWarning(input.getLoc())
            << "no program for " << n << " replicas: the global batch " << batch
            << " does not divide by " << n;
    }
  }

  // The replica-independent part runs once.
  OwningOpRef<ModuleOp> base = cast<ModuleOp>(input->clone());
  if (failed(runPasses(*base, options, [&](OpPassManager &pm) {
        pm.addPass(
            createAssignPrecision(AssignPrecisionOptions{options.precision}));
        pm.addPass(createBuildTrainingStep());
        if (options.fuse)
          pm.addPass(createFuse());
        if (options.assignFilterLayout)
          pm.addPass(createAssignFilterLayout());
      })))
    return failure();

  OwningOpRef<ModuleOp> result = cast<ModuleOp>(base->clone());
  for (StringRef step : {"train_step", "eval_step", "predict_step"})
    if (Operation *model = SymbolTable::lookupSymbolIn(*result, step))
      model->erase();

  for (int64_t n : counts) {
    OwningOpRef<ModuleOp> replicated = cast<ModuleOp>(base->clone());
    if (failed(runPasses(*replicated, options, [&](OpPassManager &pm) {
          pm.addPass(createReplicate(ReplicateOptions{n}));
          pm.addPass(createInsertAllReduce(
              InsertAllReduceOptions{options.bucketBytes}));
          pm.addPass(createLowerToExec());
          pm.addPass(createInsertTimestamps());
          PlanMemoryOptions planOptions;
          planOptions.maxArenaBytes = options.maxArenaBytes;
          pm.addPass(createPlanMemory(planOptions));
        })))
      return failure();
    for (exec::ProgramOp program :
         llvm::make_early_inc_range(replicated->getOps<exec::ProgramOp>())) {
      std::string name =
          (program.getSymName() + "_x" + std::to_string(n)).str();
      program.setSymName(name);
      program->moveBefore(result->getBody(), result->getBody()->end());
    }
  }
  return result;
}
