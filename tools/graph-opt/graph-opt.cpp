//===- graph-opt.cpp - mlir-opt for the graph dialects and passes ---------===//

#include "compiler/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::graphc::registerGraphCompilerPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::graph::GraphDialect, mlir::dist::DistDialect,
                  mlir::exec::ExecDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "graph optimizer driver\n", registry));
}
