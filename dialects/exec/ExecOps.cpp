//===- ExecOps.cpp - exec dialect ops -------------------------------------===//

#include "dialects/exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::exec;

std::optional<int64_t> mlir::exec::getBufferDevice(Value buffer) {
  Operation *def = buffer.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto view = dyn_cast<ViewOp>(def))
    return getBufferDevice(view.getSource());
  if (auto alloc = dyn_cast<AllocOp>(def))
    return alloc.getDevice();
  if (auto variable = dyn_cast<VariableOp>(def))
    return variable.getDevice();
  if (auto input = dyn_cast<InputOp>(def))
    return input.getDevice();
  return std::nullopt;
}

static int64_t byteSize(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

LogicalResult ProgramOp::verify() {
  int64_t replicas = getReplicas();
  // Devices and replicas are signed in meaning; I64Attr getters are not.
  auto outside = [&](int64_t index) { return index < 0 || index >= replicas; };
  for (Operation &op : getBody().front()) {
    std::optional<int64_t> device, replica;
    if (auto alloc = dyn_cast<AllocOp>(op))
      device = alloc.getDeviceAttr().getInt();
    else if (auto variable = dyn_cast<VariableOp>(op))
      device = variable.getDeviceAttr().getInt();
    else if (auto input = dyn_cast<InputOp>(op)) {
      device = input.getDeviceAttr().getInt();
      replica = input.getReplicaAttr().getInt();
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      replica = output.getReplicaAttr().getInt();
    } else if (auto stream = op.getAttrOfType<StreamAttr>("stream")) {
      device = stream.getDevice();
    } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
      if (static_cast<int64_t>(reduce.getBuffers().size()) != replicas)
        return op.emitOpError("needs one buffer per replica (")
               << replicas << "), got " << reduce.getBuffers().size();
    }
    if (device && outside(*device))
      return op.emitOpError("device ")
             << *device << " is outside this program's " << replicas
             << " replica(s)";
    if (replica && outside(*replica))
      return op.emitOpError("replica ")
             << *replica << " is outside this program's " << replicas
             << " replica(s)";
  }
  if (std::optional<ArrayRef<int64_t>> arenas = getArenaBytes()) {
    if (static_cast<int64_t>(arenas->size()) != replicas)
      return emitOpError("needs one arena size per device (")
             << replicas << "), got " << arenas->size();
    WalkResult result = walk([&](AllocOp alloc) {
      std::optional<uint64_t> offset = alloc.getOffset();
      if (!offset) {
        alloc.emitOpError("has no offset although the program is planned");
        return WalkResult::interrupt();
      }
      int64_t end = *offset + byteSize(alloc.getBuffer().getType());
      if (end > (*arenas)[alloc.getDevice()]) {
        alloc.emitOpError("ends at byte ")
            << end << ", past the arena of device " << alloc.getDevice() << " ("
            << (*arenas)[alloc.getDevice()] << " bytes)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult ViewOp::verify() {
  MemRefType source = getSource().getType(), view = getBuffer().getType();
  if (source.getElementType() != view.getElementType())
    return emitOpError("must keep the element type");
  int64_t offset = getOffsetAttr().getInt();
  if (offset < 0 || offset + view.getNumElements() > source.getNumElements())
    return emitOpError("elements [")
           << offset << ", " << offset + view.getNumElements()
           << ") are outside the source's " << source.getNumElements();
  return success();
}

/// Every buffer a stream op touches must live on the stream's device.
static LogicalResult verifyOnDevice(Operation *op, ValueRange buffers,
                                    StreamAttr stream) {
  for (auto [i, buffer] : llvm::enumerate(buffers)) {
    std::optional<int64_t> device = getBufferDevice(buffer);
    if (device && *device != stream.getDevice())
      return op->emitOpError("buffer #")
             << i << " lives on device " << *device
             << " but the op runs on device " << stream.getDevice();
  }
  return success();
}

LogicalResult LaunchOp::verify() {
  if (getKernel().empty())
    return emitOpError("needs a kernel name");
  if (getStream().getKind() == StreamKind::comm)
    return emitOpError("kernels run on compute or copy streams, not comm");
  if (failed(verifyOnDevice(*this, getIns(), getStream())))
    return failure();
  return verifyOnDevice(*this, getOuts(), getStream());
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "sum" && getReduction() != "mean")
    return emitOpError("reduction must be 'sum' or 'mean', got '")
           << getReduction() << "'";
  if (getBuffers().empty())
    return emitOpError("needs one buffer per replica");
  Type first = getBuffers().front().getType();
  for (auto [r, buffer] : llvm::enumerate(getBuffers())) {
    if (buffer.getType() != first)
      return emitOpError("buffer of replica ")
             << r << " has type " << buffer.getType() << ", replica 0 has "
             << first;
    std::optional<int64_t> device = getBufferDevice(buffer);
    if (device && *device != static_cast<int64_t>(r))
      return emitOpError("buffer #") << r << " lives on device " << *device;
  }
  return success();
}

LogicalResult CopyOp::verify() {
  if (getSource().getType() != getTarget().getType())
    return emitOpError("source and target types differ");
  return verifyOnDevice(*this, {getSource(), getTarget()}, getStream());
}

LogicalResult WaitOp::verify() {
  auto record = getEvent().getDefiningOp<RecordOp>();
  if (record && record.getStream() == getStream())
    return emitOpError("waits on its own stream: the wait is a no-op");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.cpp.inc"
