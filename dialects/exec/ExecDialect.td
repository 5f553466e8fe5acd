//===- ExecDialect.td - The exec dialect -------------------*- tablegen -*-===//
//
// The lowered program the runtime executes: buffers (memrefs) in per-device
// arenas, kernel launches on streams, collectives, copies, events between
// streams and timestamp points. One exec op becomes one plan entry.
//
//===----------------------------------------------------------------------===//

#ifndef EXEC_DIALECT_TD
#define EXEC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::mlir::exec";
  let summary = "lowered programs: buffers, kernels, streams, events";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_StreamKind : I32EnumAttr<"StreamKind", "the queues of a device", [
    I32EnumAttrCase<"compute", 0>, I32EnumAttrCase<"comm", 1>,
    I32EnumAttrCase<"copy", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::exec";
}

def Exec_StreamAttr : AttrDef<Exec_Dialect, "Stream"> {
  let mnemonic = "stream";
  let summary = "one in-order queue of one device";
  let parameters = (ins EnumParameter<Exec_StreamKind>:$kind, "int64_t":$device);
  let assemblyFormat = "`<` $kind `,` $device `>`";
}

def Exec_ProgramKind : I32EnumAttr<"ProgramKind", "what a program does", [
    I32EnumAttrCase<"train", 0>, I32EnumAttrCase<"eval", 1>,
    I32EnumAttrCase<"predict", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::exec";
}
def Exec_ProgramKindAttr : EnumAttr<Exec_Dialect, Exec_ProgramKind, "program_kind">;

def Exec_EventType : TypeDef<Exec_Dialect, "Event"> {
  let mnemonic = "event";
  let summary = "a point on one stream that other streams can wait for";
}

#endif // EXEC_DIALECT_TD
