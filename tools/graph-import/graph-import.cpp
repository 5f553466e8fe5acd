//===- graph-import.cpp - Keras models to the graph dialect ---------------===//
//
//   graph-import model.json -o model.mlir [--loss NAME] [--from-logits]
//       [--optimizer NAME] [--learning-rate LR] [--batch-size N]
//
// Reads a Keras model (`to_json` output or a `.keras` archive) and writes the
// graph dialect module. On any error it prints the diagnostics, writes no
// output file and exits non-zero.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "frontends/keras/KerasImporter.h"
#include "tools/ToolOptions.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>

namespace cl = llvm::cl;

static cl::OptionCategory importCategory("graph-import options");

static cl::opt<std::string> inputFilename(cl::Positional, cl::Required,
                                          cl::desc("<model.json|model.keras>"),
                                          cl::cat(importCategory));

static cl::opt<std::string>
    outputFilename("o", cl::init("-"), cl::desc("Output file (- for stdout)"),
                   cl::value_desc("filename"), cl::cat(importCategory));

static cl::opt<std::string>
    loss("loss",
         cl::desc("Loss: categorical_crossentropy or "
                  "sparse_categorical_crossentropy (overrides compile_config)"),
         cl::value_desc("name"), cl::cat(importCategory));

static cl::opt<bool>
    fromLogits("from-logits",
               cl::desc("The model outputs logits, not probabilities "
                        "(overrides compile_config)"),
               cl::cat(importCategory));

static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("Optimizer: sgd, adam, rmsprop, adagrad, adamax or "
                       "nadam (overrides compile_config)"),
              cl::value_desc("name"), cl::cat(importCategory));

static cl::opt<double>
    learningRate("learning-rate",
                 cl::desc("Learning rate (overrides compile_config)"),
                 cl::value_desc("rate"), cl::cat(importCategory));

// Keras' optimizer options (keras/src/optimizers/base_optimizer.py), for a
// JSON model without a compile_config or to override it: 0 is off.
static cl::opt<double>
    clipnorm("clipnorm",
             cl::desc("Clip each variable's gradient to this norm (overrides "
                      "compile_config; 0: off)"),
             cl::value_desc("c"), cl::cat(importCategory));
static cl::opt<double> globalClipnorm(
    "global-clipnorm",
    cl::desc("Clip all gradients together to this global norm (overrides "
             "compile_config; 0: off)"),
    cl::value_desc("c"), cl::cat(importCategory));
static cl::opt<double>
    clipvalue("clipvalue",
              cl::desc("Clip every gradient element to [-c, c] (overrides "
                       "compile_config; 0: off)"),
              cl::value_desc("c"), cl::cat(importCategory));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Decoupled weight decay, var -= var * wd * lr "
                         "(overrides compile_config; 0: off)"),
                cl::value_desc("wd"), cl::cat(importCategory));

static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("Global batch size (default: the batch the model fixes in its "
             "batch_shape, else 32; must agree with a fixed one)"),
    cl::value_desc("n"), cl::cat(importCategory));

static llvm::SourceMgr::DiagKind diagKind(mlir::DiagnosticSeverity severity) {
  switch (severity) {
  case mlir::DiagnosticSeverity::Note:
    return llvm::SourceMgr::DK_Note;
  case mlir::DiagnosticSeverity::Warning:
    return llvm::SourceMgr::DK_Warning;
  case mlir::DiagnosticSeverity::Error:
    return llvm::SourceMgr::DK_Error;
  case mlir::DiagnosticSeverity::Remark:
    return llvm::SourceMgr::DK_Remark;
  }
  llvm_unreachable("unknown severity");
}

/// A source line longer than this is left out of a diagnostic: it would bury
/// the message (a one-line `to_json` config, a nesting bomb), and the
/// position says where to look.
constexpr size_t kMaxShownLineLength = 500;

/// The length of line `line` of `path`, which is loaded into `sourceMgr`
/// where the SourceMgr handler will look for it; 0 if it cannot be read.
static size_t lineLength(llvm::SourceMgr &sourceMgr, llvm::StringRef path,
                         unsigned line) {
  unsigned id = 0;
  for (unsigned i = 1; i <= sourceMgr.getNumBuffers() && !id; ++i)
    if (sourceMgr.getMemoryBuffer(i)->getBufferIdentifier() == path)
      id = i;
  if (!id) {
    std::string includedPath;
    id = sourceMgr.AddIncludeFile(path.str(), llvm::SMLoc(), includedPath);
  }
  if (!id)
    return 0;
  llvm::SMLoc start = sourceMgr.FindLocForLineAndColumn(id, line, 1);
  if (!start.isValid())
    return 0;
  llvm::StringRef rest(start.getPointer(),
                       sourceMgr.getMemoryBuffer(id)->getBufferEnd() -
                           start.getPointer());
  return std::min(rest.find_first_of("\r\n"), rest.size());
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  graph::tools::showOnlyToolOptions(importCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "Keras model to graph dialect importer\n");

  mlir::DialectRegistry registry;
  registry.insert<mlir::graph::GraphDialect>();
  mlir::MLIRContext context(registry);

  // Diagnostics with a position print as file:line:col with the source line.
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler sourceMgrHandler(sourceMgr, &context);
  // Two kinds print in a form of their own. Those about a whole file (it
  // cannot be read, it is no zip archive) have line 0: print "file: error:
  // ..." rather than "file:0:0: error: ...". Those on a line too long to show
  // print "file:line:col: error: ..." alone.
  mlir::ScopedDiagnosticHandler ownFormHandler(
      &context, [&](mlir::Diagnostic &diag) {
        auto loc = diag.getLocation()->findInstanceOf<mlir::FileLineColLoc>();
        if (!loc)
          return mlir::failure(); // Left to the SourceMgr handler.
        llvm::StringRef file = loc.getFilename().getValue();
        if (loc.getLine() == 0) {
          llvm::SMDiagnostic(file, diagKind(diag.getSeverity()), diag.str())
              .print(nullptr, llvm::errs());
          return mlir::success();
        }
        if (lineLength(sourceMgr, file, loc.getLine()) <= kMaxShownLineLength)
          return mlir::failure();
        std::string position = (file + ":" + llvm::Twine(loc.getLine()) + ":" +
                                llvm::Twine(loc.getColumn()))
                                   .str();
        llvm::SMDiagnostic(position, diagKind(diag.getSeverity()), diag.str())
            .print(nullptr, llvm::errs());
        return mlir::success();
      });

  graph::keras::ImportOptions options;
  if (loss.getNumOccurrences())
    options.loss = loss;
  if (fromLogits.getNumOccurrences())
    options.fromLogits = fromLogits;
  if (optimizer.getNumOccurrences())
    options.optimizer = optimizer;
  if (learningRate.getNumOccurrences())
    options.learningRate = learningRate;
  if (clipnorm.getNumOccurrences())
    options.clipnorm = clipnorm;
  if (globalClipnorm.getNumOccurrences())
    options.globalClipnorm = globalClipnorm;
  if (clipvalue.getNumOccurrences())
    options.clipvalue = clipvalue;
  if (weightDecay.getNumOccurrences())
    options.weightDecay = weightDecay;
  if (batchSize.getNumOccurrences())
    options.batchSize = batchSize;

  mlir::OwningOpRef<mlir::ModuleOp> module =
      graph::keras::importKerasFile(inputFilename, context, options);
  // ModelBuilder::finish verified the module: verifying it again here, and
  // once more in the printer, took a fifth of a 100,000-layer import.
  if (!module)
    return 1;

  // The output file is created only now, so a failed import leaves none.
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "graph-import") << error << "\n";
    return 1;
  }
  module->print(output->os(), mlir::OpPrintingFlags().assumeVerified());
  output->keep();
  return 0;
}
