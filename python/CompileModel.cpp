//===- CompileModel.cpp - a Keras model to a plan, in one call ------------===//

#include "python/CompileModel.h"

#include "compiler/Passes.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanEmitter.h"
#include "frontends/keras/KerasImporter.h"
#include "runtime/plan/PlanLoader.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

namespace graph::python {

bool compileKerasModel(const std::string &source, bool isPath,
                       const CompileOptions &options,
                       std::vector<uint8_t> &plan, std::string &error) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::graph::GraphDialect, mlir::dist::DistDialect,
                      mlir::exec::ExecDialect, mlir::memref::MemRefDialect>();
  // Every diagnostic, as "where: error: what", into `error`.
  std::string messages;
  mlir::ScopedDiagnosticHandler collect(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    std::string line;
    llvm::raw_string_ostream os(line);
    if (auto loc = d.getLocation()->findInstanceOf<mlir::FileLineColLoc>()) {
      os << loc.getFilename().getValue();
      if (loc.getLine() > 0)
        os << ":" << loc.getLine() << ":" << loc.getColumn();
      os << ": ";
    }
    os << d.str();
    for (const mlir::Diagnostic &note : d.getNotes())
      os << "\n  note: " << note.str();
    messages += (messages.empty() ? "" : "\n") + line;
    return mlir::success();
  });
  auto fail = [&](const std::string &fallback) {
    error = messages.empty() ? fallback : messages;
    return false;
  };

  graph::keras::ImportOptions import;
  import.batchSize = options.batchSize;
  import.loss = options.loss;
  import.optimizer = options.optimizer;
  import.learningRate = options.learningRate;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      isPath ? graph::keras::importKerasFile(source, context, import)
             : graph::keras::importKerasJson(source, "<keras.Model>", context,
                                             import);
  if (!module)
    return fail("the model could not be imported");

  mlir::graphc::PipelineOptions pipeline;
  pipeline.replicas = options.replicas;
  pipeline.precision = options.precision;
  auto lowered = mlir::graphc::compileTraining(*module, pipeline);
  if (mlir::failed(lowered))
    return fail("the model could not be compiled");
  std::vector<uint8_t> bytes;
  if (mlir::failed(mlir::graphc::emitPlan(**lowered, bytes)))
    return fail("the plan could not be emitted");
  // The runtime's own reader checks what the compiler wrote, as graphc does.
  const ::graph::plan::Plan *check = nullptr;
  ::graph::runtime::Status status =
      ::graph::runtime::verifyPlan(bytes.data(), bytes.size(), "plan", check);
  if (!status) {
    error = "internal error: " + status.message();
    return false;
  }
  plan = std::move(bytes);
  return true;
}

} // namespace graph::python
