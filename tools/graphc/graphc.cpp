//===- graphc.cpp - compile a model to a training plan --------------------===//
//
//   graphc model.mlir -o model.plan [--replicas 1,2] [--bucket-bytes N]
//                     [--max-arena-bytes N] [--no-fuse]
//                     [--precision float32|mixed_bfloat16|mixed_float16]
//                     [--keras-filter-layout] [--emit=mlir]
//                     [--mlir-timing]
//                     [--print-ir-after-all]
//   graphc --inspect model.plan
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanEmitter.h"
#include "compiler/SourceNesting.h"
#include "runtime/plan/PlanInspector.h"
#include "runtime/plan/PlanLoader.h"
#include "tools/ToolOptions.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <deque>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory graphcCategory("graphc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::init("-"), cl::cat(graphcCategory));
static cl::opt<std::string> outputPath("o", cl::desc("plan file to write"),
                                       cl::value_desc("file"),
                                       cl::cat(graphcCategory));
static cl::list<int64_t>
    replicas("replicas", cl::CommaSeparated,
             cl::desc("replica counts to compile (default: 1,2,4,8 where "
                      "they divide the global batch)"),
             cl::cat(graphcCategory));
static cl::opt<int64_t>
    bucketBytes("bucket-bytes", cl::init(4 << 20),
                cl::desc("largest all-reduce bucket in bytes (0: one bucket)"),
                cl::cat(graphcCategory));
static cl::opt<int64_t> maxArenaBytes(
    "max-arena-bytes", cl::init(graphc::kDefaultMaxArenaBytes),
    cl::desc("refuse a plan whose arena on one device needs more bytes "
             "(default 68719476736, 64 GiB)"),
    cl::value_desc("n"), cl::cat(graphcCategory));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("the dtype policy to train in, replacing the model's: float32, "
             "mixed_bfloat16 or mixed_float16 (layers the model keeps in "
             "float32 stay float32)"),
    cl::value_desc("policy"), cl::init(""));
static cl::opt<bool> noFuse("no-fuse", cl::desc("skip graph-fuse"),
                            cl::cat(graphcCategory));
static cl::opt<bool> kerasFilterLayout(
    "keras-filter-layout",
    cl::desc("keep conv kernels in Keras' HWIO layout instead of OHWI (the "
             "backends then transpose them in every step; for comparison)"),
    cl::cat(graphcCategory));
static cl::opt<std::string>
    emit("emit", cl::init("plan"),
         cl::desc("what to write: plan (default) or mlir (the lowered IR)"),
         cl::cat(graphcCategory));
static cl::opt<std::string> inspect("inspect",
                                    cl::desc("print a summary of a plan file"),
                                    cl::value_desc("plan"),
                                    cl::cat(graphcCategory));

static int inspectPlan(const std::string &path) {
  ::graph::runtime::LoadedPlan loaded;
  ::graph::runtime::Status status = ::graph::runtime::loadPlan(path, loaded);
  if (!status) {
    llvm::errs() << "graphc: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << ::graph::runtime::describePlan(*loaded.plan);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // The MLIR options this tool's usage names stay in --help; the rest are
  // listed by --help-hidden.
  ::graph::tools::showOnlyToolOptions(
      graphcCategory,
      {"mlir-timing", "mlir-print-ir-after-all", "mlir-print-ir-before-all"});
  // MLIR registers IR printing as --mlir-print-ir-*; accept the short
  // spelling too.
  std::vector<std::string> args(argv, argv + argc);
  for (std::string &arg : args)
    if (llvm::StringRef(arg).starts_with("--print-ir-"))
      arg = "--mlir-" + arg.substr(2);
  std::vector<const char *> cargs;
  for (const std::string &arg : args)
    cargs.push_back(arg.c_str());
  cl::ParseCommandLineOptions(static_cast<int>(cargs.size()), cargs.data(),
                              "graphc: model to training plan\n");

  if (!inspect.empty())
    return inspectPlan(inspect);
  if (emit != "plan" && emit != "mlir") {
    llvm::errs() << "graphc: --emit must be 'plan' or 'mlir', got '" << emit
                 << "'\n";
    return 1;
  }
  if (emit == "plan" && outputPath.empty()) {
    llvm::errs() << "graphc: no output: pass -o model.plan (or --emit=mlir)\n";
    return 1;
  }

  MLIRContext context;
  context.loadDialect<mlir::graph::GraphDialect, dist::DistDialect,
                      exec::ExecDialect, memref::MemRefDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto file = openInputFile(inputPath, &error);
  if (!file) {
    llvm::errs() << "graphc: " << error << "\n";
    return 1;
  }
  if (failed(graphc::checkSourceNesting(*file, llvm::errs())))
    return 1;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  // One timing report for all the pass managers the pipeline runs (one per
  // replica count); their scopes must outlive the runs.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootScope = timing.getRootScope();
  std::deque<TimingScope> scopes;
  graphc::PipelineOptions options;
  options.replicas.assign(replicas.begin(), replicas.end());
  options.bucketBytes = bucketBytes;
  options.fuse = !noFuse;
  options.precision = precision;
  options.assignFilterLayout = !kerasFilterLayout;
  options.maxArenaBytes = maxArenaBytes;
  options.configure = [&](PassManager &pm) {
    // Pipelines run one after another: close the previous one's scope.
    if (!scopes.empty())
      scopes.back().stop();
    scopes.push_back(rootScope.nest(
        llvm::StringRef(scopes.empty() ? "training step" : "lowering")));
    pm.enableTiming(scopes.back());
    return applyPassManagerCLOptions(pm);
  };
  if (maxArenaBytes <= 0) {
    llvm::errs() << "graphc: --max-arena-bytes must be positive, got "
                 << maxArenaBytes << "\n";
    return 1;
  }
  for (int64_t n : options.replicas)
    if (n < 1) {
      llvm::errs() << "graphc: --replicas needs counts >= 1, got " << n << "\n";
      return 1;
    }

  auto lowered = graphc::compileTraining(*module, options);
  if (!scopes.empty())
    scopes.back().stop();
  if (failed(lowered))
    return 1;

  if (emit == "mlir") {
    std::string path = outputPath.empty() ? "-" : outputPath.getValue();
    auto output = openOutputFile(path, &error);
    if (!output) {
      llvm::errs() << "graphc: " << error << "\n";
      return 1;
    }
    (*lowered)->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }

  std::vector<uint8_t> bytes;
  if (failed(graphc::emitPlan(**lowered, bytes)))
    return 1;
  // Check what we wrote with the runtime's own reader before anyone runs it.
  const ::graph::plan::Plan *check = nullptr;
  ::graph::runtime::Status status = ::graph::runtime::verifyPlan(
      bytes.data(), bytes.size(), outputPath, check);
  if (!status) {
    llvm::errs() << "graphc: internal error: " << status.message() << "\n";
    return 1;
  }
  // Written to a temporary file and renamed: never a partial plan.
  if (llvm::Error err =
          llvm::writeToOutput(outputPath, [&](llvm::raw_ostream &os) {
            os.write(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
            return llvm::Error::success();
          })) {
    llvm::errs() << "graphc: " << outputPath << ": "
                 << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
