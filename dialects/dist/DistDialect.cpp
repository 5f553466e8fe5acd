//===- DistDialect.cpp - The dist dialect ---------------------------------===//

#include "dialects/dist/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

#include "dialects/dist/DistDialect.cpp.inc"
#include "dialects/dist/DistEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/dist/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/dist/DistOps.cpp.inc"
      >();
  registerAttributes();
}

void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/dist/DistAttrs.cpp.inc"
      >();
}

std::optional<int64_t> mlir::dist::getReplica(Operation *op) {
  if (auto device = op->getAttrOfType<DeviceAttr>(DistDialect::kDeviceAttrName))
    return device.getReplica();
  return std::nullopt;
}

void mlir::dist::setReplica(Operation *op, int64_t replica) {
  op->setAttr(DistDialect::kDeviceAttrName,
              DeviceAttr::get(op->getContext(), replica));
}
