//===- DistDialect.td - The dist dialect -------------------*- tablegen -*-===//
//
// In-graph replication: ops of replica r carry `dist.device = #dist.device<r>`;
// collectives take one operand per replica.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_TD
#define DIST_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "in-graph replication across devices";
  let description = [{
    A replicated program holds N copies of the training step in one block.
    Every op of replica r carries the discardable attribute
    `dist.device = #dist.device<r>`. The device is logical: whether replica
    r runs on a CPU or a GPU is the runtime's choice (`graphrun --cpus N` or
    `--gpus N`), so one plan serves both.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute that places an op on a replica.
    static constexpr ::llvm::StringLiteral kDeviceAttrName = "dist.device";
    /// The discardable attribute dist-replicate sets on a replicated step.
    static constexpr ::llvm::StringLiteral kReplicasAttrName = "dist.replicas";
    void registerAttributes();
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_DeviceAttr : AttrDef<Dist_Dialect, "Device"> {
  let mnemonic = "device";
  let summary = "the logical device (replica) an op runs on";
  let parameters = (ins "int64_t":$replica);
  let assemblyFormat = "`<` $replica `>`";
}

def Dist_ReduceKind : I32EnumAttr<"ReduceKind", "how an all-reduce combines", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::dist";
}
def Dist_ReduceKindAttr : EnumAttr<Dist_Dialect, Dist_ReduceKind, "reduce">;

#endif // DIST_DIALECT_TD
