//===- GraphDialect.h - The graph dialect -----------------------*- C++ -*-===//

#ifndef DIALECTS_GRAPH_GRAPHDIALECT_H
#define DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/graph/GraphDialect.h.inc"

#endif // DIALECTS_GRAPH_GRAPHDIALECT_H
