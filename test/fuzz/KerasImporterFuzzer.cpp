//===- KerasImporterFuzzer.cpp - libFuzzer target for the Keras importer --===//
//
// Every input, JSON or a .keras archive, must give a verified module or
// diagnostics; the sanitizers catch the rest. Built by test/fuzz/CMakeLists.txt
// (the graph-fuzzers step of the main build), run by test/fuzz/*.test and
// test/fuzz/run-fuzzer.sh.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "frontends/keras/KerasImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A context per input: one shared context would keep every attribute and
  // type an input made, and an input's result would depend on the ones
  // before it.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<mlir::graph::GraphDialect>();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = graph::keras::importKerasBuffer(
      bytes, "fuzz.json", context, graph::keras::ImportOptions());
  // What graph-import does next: verify and print.
  if (module && mlir::succeeded(mlir::verify(*module)))
    module->print(llvm::nulls());
  return 0;
}
