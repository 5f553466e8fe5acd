//===- ExecOps.h - exec dialect ops, types, attributes ----------*- C++ -*-===//

#ifndef DIALECTS_EXEC_EXECOPS_H
#define DIALECTS_EXEC_EXECOPS_H

#include "dialects/exec/ExecDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/exec/ExecEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/exec/ExecAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/exec/ExecTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.h.inc"

namespace mlir::exec {
/// The device a buffer lives on: that of the alloc, variable or input it
/// comes from (through views).
std::optional<int64_t> getBufferDevice(Value buffer);
} // namespace mlir::exec

#endif // DIALECTS_EXEC_EXECOPS_H
