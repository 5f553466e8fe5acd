//===- ExecDialect.h - The exec dialect -------------------------*- C++ -*-===//

#ifndef DIALECTS_EXEC_EXECDIALECT_H
#define DIALECTS_EXEC_EXECDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/exec/ExecDialect.h.inc"

#endif // DIALECTS_EXEC_EXECDIALECT_H
