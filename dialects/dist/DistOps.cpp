//===- DistOps.cpp - dist dialect ops -------------------------------------===//

#include "dialects/dist/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::dist;

/// One operand per replica, all of one type; results mirror the operands.
static LogicalResult verifyPerReplica(Operation *op, ValueRange inputs,
                                      ValueRange outputs) {
  if (inputs.empty())
    return op->emitOpError("needs one operand per replica, got none");
  Type first = inputs.front().getType();
  for (auto [r, input] : llvm::enumerate(inputs))
    if (input.getType() != first)
      return op->emitOpError("operand of replica ")
             << r << " has type " << input.getType() << ", replica 0 has "
             << first << ": replicas must agree in shape and element type";
  if (outputs.size() != inputs.size())
    return op->emitOpError("needs one result per replica (")
           << inputs.size() << "), got " << outputs.size();
  for (Value output : outputs)
    if (output.getType() != first)
      return op->emitOpError("results must have the operands' type ") << first;
  return success();
}

void AllReduceOp::build(OpBuilder &builder, OperationState &state,
                        ReduceKind kind, ValueRange inputs, int64_t bucket) {
  build(builder, state, inputs.getTypes(),
        ReduceKindAttr::get(builder.getContext(), kind), inputs,
        builder.getI64IntegerAttr(bucket));
}

LogicalResult AllReduceOp::verify() {
  return verifyPerReplica(*this, getInputs(), getOutputs());
}

LogicalResult BroadcastOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs one operand per replica, got none");
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= static_cast<int64_t>(getInputs().size()))
    return emitOpError("root ") << root << " is not a replica (0 to "
                                << getInputs().size() - 1 << ")";
  return verifyPerReplica(*this, getInputs(), getOutputs());
}

/// Elements of all `values`, which a bucket of the same element type holds.
static FailureOr<int64_t> packedElements(Operation *op, ValueRange values,
                                         RankedTensorType bucket) {
  if (values.empty())
    return op->emitOpError("needs at least one tensor");
  if (bucket.getRank() != 1)
    return op->emitOpError("bucket must be rank 1, got ") << bucket;
  int64_t elements = 0;
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() != bucket.getElementType())
      return op->emitOpError("tensor element type ")
             << type.getElementType() << " differs from the bucket's "
             << bucket.getElementType();
    elements += type.getNumElements();
  }
  if (elements != bucket.getDimSize(0))
    return op->emitOpError("bucket of ")
           << bucket.getDimSize(0) << " elements cannot hold tensors of "
           << elements << " elements";
  return elements;
}

LogicalResult PackOp::verify() {
  return packedElements(*this, getInputs(), getBucket().getType());
}

LogicalResult UnpackOp::verify() {
  return packedElements(*this, getOutputs(), getBucket().getType());
}

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.cpp.inc"
