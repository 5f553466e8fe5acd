//===- GraphDialect.td - The graph dialect -----------------*- tablegen -*-===//
//
// Keras-level tensor ops with value semantics on builtin ranked tensors, NHWC
// (Keras' channels_last). Shapes are static: the batch dimension is the global
// batch, and replication rewrites it to the per-replica batch.
//
//===----------------------------------------------------------------------===//

#ifndef GRAPH_DIALECT_TD
#define GRAPH_DIALECT_TD

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::mlir::graph";
  let summary = "Keras-level training graphs: layers, variables, losses";
  let description = [{
    The `graph` dialect holds a model the way Keras describes it: variables
    are module-level symbols (`graph.variable`), the forward computation is a
    `graph.model` region of layer ops, and `graph.training` records how the
    model is trained (loss, optimizer, metrics, global batch size).
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The discardable attribute by which an op says its compute type
    /// (a TypeAttr: bf16 or f16): the importer puts it on the ops of a
    /// layer under a mixed-precision policy, and graph-assign-precision
    /// turns it into tensor types and casts.
    static constexpr ::llvm::StringLiteral getComputeTypeAttrName() {
      return ::llvm::StringLiteral("graph.compute_type");
    }

    /// The compute type of a Keras dtype policy a graph model may have:
    /// null for "float32", bf16 for "mixed_bfloat16", f16 for
    /// "mixed_float16"; failure for any other name.
    static ::mlir::FailureOr<::mlir::Type>
    policyComputeType(::mlir::MLIRContext *context, ::llvm::StringRef policy);
  }];
  let hasOperationAttrVerify = 1;
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // GRAPH_DIALECT_TD
