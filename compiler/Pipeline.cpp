//===- Pipeline.cpp - graphc's pass pipeline ------------------------------===//

#include "compiler/Pipeline.h"
#include "compiler/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::graphc;

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
  if (trainings.size() != 1)
    return input.emitError("graphc needs one graph.training op (the loss, "
                           "optimizer and batch): import the model with "
                           "--loss and --optimizer"),
           failure();
  int64_t batch = trainings.front().getGlobalBatchSize();

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
        pm.addPass(createBuildTrainingStep());
        if (options.fuse)
          pm.addPass(createFuse());
      })))
    return failure();

  OwningOpRef<ModuleOp> result = cast<ModuleOp>(base->clone());
  for (StringRef step : {"train_step", "eval_step"})
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
          pm.addPass(createPlanMemory());
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
