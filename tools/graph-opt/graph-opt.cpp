//===- graph-opt.cpp - mlir-opt for the graph dialects and passes ---------===//
//
// MlirOptMain with one step before it: the input is checked for nesting too
// deep for MLIR's recursive parser (compiler/SourceNesting.h). The input is
// read once, here, so that stdin works too.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"
#include "compiler/SourceNesting.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerTransformsPasses();
  mlir::graphc::registerGraphCompilerPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::graph::GraphDialect, mlir::dist::DistDialect,
                  mlir::exec::ExecDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect>();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "graph optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // --show-dialects and --list-passes read no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(llvm::outs(), nullptr, registry, config));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::graphc::checkSourceNesting(*input, llvm::errs())))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
