//===- SourceNesting.h - refuse MLIR text too deep to parse -----*- C++ -*-===//
//
// MLIR's parser recurses once per nested region, attribute, type or
// parenthesis, and its affine expression parser once per operator: text
// nested 5,000 deep overflows the stack (OperationParser::parseRegion) long
// before any diagnostic. Every tool that parses MLIR text checks it here
// first.
//
//===----------------------------------------------------------------------===//

#ifndef COMPILER_SOURCENESTING_H
#define COMPILER_SOURCENESTING_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::graphc {

/// The deepest nesting of `{`, `(`, `[` and `<` accepted. A graph module
/// nests about 10 deep. The costliest nesting found (a region in a region)
/// takes about 4 KiB of stack a level to parse: 500 levels leave three
/// quarters of the usual 8 MiB stack free.
inline constexpr unsigned kMaxSourceNesting = 500;

/// The most operators accepted in one affine_map or affine_set: the affine
/// expression parser recurses once per operator (10,000 unary minuses
/// overflow the stack).
inline constexpr unsigned kMaxAffineOperators = 1000;

/// Scans MLIR text (string literals and `//` comments skipped; bytecode is
/// left alone) for nesting deeper than kMaxSourceNesting or an affine map
/// with more than kMaxAffineOperators operators. At the first such place it
/// prints "file:line:col: error: ..." to `os` and returns failure.
LogicalResult checkSourceNesting(const llvm::MemoryBuffer &source,
                                 llvm::raw_ostream &os);

} // namespace mlir::graphc

#endif // COMPILER_SOURCENESTING_H
