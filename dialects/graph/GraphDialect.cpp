//===- GraphDialect.cpp - The graph dialect -------------------------------===//

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::graph;

#include "dialects/graph/GraphDialect.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/graph/GraphOps.cpp.inc"
      >();
  registerAttributes();
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // Only graph.compute_type is checked here; the others (the importer's
  // graph.keras_config) are read by those who set them.
  if (attr.getName() != getComputeTypeAttrName())
    return success();
  auto type = dyn_cast<TypeAttr>(attr.getValue());
  if (!type || !(type.getValue().isBF16() || type.getValue().isF16()))
    return op->emitError() << attr.getName()
                           << " must be a type, bf16 or f16 (float32 ops "
                              "carry none), not "
                           << attr.getValue();
  return success();
}

FailureOr<Type> GraphDialect::policyComputeType(MLIRContext *context,
                                                llvm::StringRef policy) {
  if (policy == "float32")
    return Type();
  if (policy == "mixed_bfloat16")
    return Type(BFloat16Type::get(context));
  if (policy == "mixed_float16")
    return Type(Float16Type::get(context));
  return failure();
}
