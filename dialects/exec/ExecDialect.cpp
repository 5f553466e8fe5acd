//===- ExecDialect.cpp - The exec dialect ---------------------------------===//

#include "dialects/exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::exec;

#include "dialects/exec/ExecDialect.cpp.inc"
#include "dialects/exec/ExecEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/exec/ExecAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/exec/ExecTypes.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/exec/ExecOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

void ExecDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/exec/ExecAttrs.cpp.inc"
      >();
}

void ExecDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/exec/ExecTypes.cpp.inc"
      >();
}
