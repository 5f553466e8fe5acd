//===- GraphDialect.h - The graph dialect -----------------------*- C++ -*-===//

#ifndef DIALECTS_GRAPH_GRAPHDIALECT_H
#define DIALECTS_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/graph/GraphDialect.h.inc"

namespace mlir::graph {

/// The module attribute holding the Keras config a model was imported from
/// (JSON text, as given): graphc copies it into the plan
/// (Plan.keras_config), and graphrun writes it back as a .keras archive's
/// config.json, so that what goes out to Keras is the user's own model.
inline constexpr const char *kKerasConfigAttr = "graph.keras_config";

} // namespace mlir::graph

#endif // DIALECTS_GRAPH_GRAPHDIALECT_H
