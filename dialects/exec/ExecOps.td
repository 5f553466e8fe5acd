//===- ExecOps.td - exec dialect ops -----------------------*- tablegen -*-===//

#ifndef EXEC_OPS_TD
#define EXEC_OPS_TD

include "dialects/exec/ExecDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Exec_Buffer : Type<And<[MemRefOf<[AnyFloat, AnySignlessInteger]>.predicate,
    CPred<"::llvm::cast<::mlir::MemRefType>($_self).hasStaticShape()">,
    CPred<"::llvm::cast<::mlir::MemRefType>($_self).getLayout().isIdentity()">]>,
    "statically shaped, contiguous memref", "::mlir::MemRefType">;

def Exec_ProgramOp : Exec_Op<"program", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator, HasParent<"::mlir::ModuleOp">]> {
  let summary = "one lowered program for a fixed number of replicas";
  let description = [{
    Ops run in order per stream; ops on different streams are ordered only
    by events. `arena_bytes[d]` (set by exec-plan-memory) is the arena of
    device d: every `exec.alloc` of d has an offset inside it.

    ```mlir
    exec.program @train_x2 kind = train replicas = 2 {
      %x = exec.input "input_layer" device = 0 : memref<128x28x28x1xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Exec_ProgramKindAttr:$kind,
                       ConfinedAttr<I64Attr, [IntPositive]>:$replicas,
                       OptionalAttr<DenseI64ArrayAttr>:$arena_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `kind` `=` `` $kind `replicas` `=` $replicas attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

class Exec_BufferSource<string mnemonic, string what, dag args>
    : Exec_Op<mnemonic, [HasParent<"ProgramOp">]> {
  let summary = what;
  let arguments = !con(args, (ins I64Attr:$device));
  let results = (outs Exec_Buffer:$buffer);
}

def Exec_AllocOp : Exec_BufferSource<"alloc",
    "a buffer in its device's arena, live for part of the program",
    (ins OptionalAttr<I64Attr>:$offset)> {
  let assemblyFormat = "`device` `=` $device (`offset` `=` $offset^)? attr-dict `:` type($buffer)";
}

def Exec_VariableOp : Exec_BufferSource<"variable",
    "a device's copy of a variable (persistent, outside the arena)",
    (ins FlatSymbolRefAttr:$variable)> {
  let assemblyFormat = "$variable `device` `=` $device attr-dict `:` type($buffer)";
}

def Exec_InputOp : Exec_BufferSource<"input",
    "a device's share of a batch input, filled by the runtime before the step",
    (ins StrAttr:$name, I64Attr:$replica)> {
  let assemblyFormat = "$name `replica` `=` $replica `device` `=` $device attr-dict `:` type($buffer)";
}

def Exec_ViewOp : Exec_Op<"view", [Pure, HasParent<"ProgramOp">]> {
  let summary = "a part of a buffer seen as another shape";
  let description = [{
    `offset` counts elements. A gradient that lives inside an all-reduce
    bucket is a view of the bucket, so the producer writes it in place.
  }];
  let arguments = (ins Exec_Buffer:$source, I64Attr:$offset);
  let results = (outs Exec_Buffer:$buffer);
  let assemblyFormat = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($buffer)";
  let hasVerifier = 1;
}

def Exec_LaunchOp : Exec_Op<"launch", [HasParent<"ProgramOp">,
    AttrSizedOperandSegments]> {
  let summary = "runs one kernel on a stream";
  let description = [{
    `kernel` names an entry of the runtime's kernel registry (the graph op it
    comes from: "fused_conv2d", "adam_update", ...); `config` holds that
    op's attributes. Reads `ins`, writes `outs`.

    ```mlir
    exec.launch "fused_conv2d" on <compute, 0> ins(%x, %k, %b : ...) outs(%y : ...)
        config {activation = "relu", strides = [1, 1], ...}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Exec_StreamAttr:$stream,
                       Variadic<Exec_Buffer>:$ins, Variadic<Exec_Buffer>:$outs,
                       DictionaryAttr:$config);
  let assemblyFormat = [{
    $kernel `on` $stream `ins` `(` ($ins^ `:` type($ins))? `)`
    `outs` `(` ($outs^ `:` type($outs))? `)` `config` $config attr-dict
  }];
  let hasVerifier = 1;
}

def Exec_AllReduceOp : Exec_Op<"all_reduce", [HasParent<"ProgramOp">]> {
  let summary = "reduces one buffer per replica in place, on the comm streams";
  let arguments = (ins StrAttr:$reduction, Variadic<Exec_Buffer>:$buffers,
                       I64Attr:$bucket);
  let assemblyFormat = [{
    $reduction $buffers `bucket` `=` $bucket attr-dict `:` type($buffers)
  }];
  let hasVerifier = 1;
}

def Exec_CopyOp : Exec_Op<"copy", [HasParent<"ProgramOp">,
    AllTypesMatch<["source", "target"]>]> {
  let summary = "copies a buffer into another of the same type";
  let arguments = (ins Exec_StreamAttr:$stream, Exec_Buffer:$source,
                       Exec_Buffer:$target);
  let assemblyFormat = "$source `to` $target `on` $stream attr-dict `:` type($source)";
  let hasVerifier = 1;
}

def Exec_RecordOp : Exec_Op<"record", [HasParent<"ProgramOp">]> {
  let summary = "marks the point a stream has reached";
  let arguments = (ins Exec_StreamAttr:$stream);
  let results = (outs Exec_EventType:$event);
  let assemblyFormat = "`on` $stream attr-dict";
}

def Exec_WaitOp : Exec_Op<"wait", [HasParent<"ProgramOp">]> {
  let summary = "holds a stream until an event's point is reached";
  let arguments = (ins Exec_EventType:$event, Exec_StreamAttr:$stream);
  let assemblyFormat = "$event `on` $stream attr-dict";
  let hasVerifier = 1;
}

def Exec_TimestampOp : Exec_Op<"timestamp", [HasParent<"ProgramOp">]> {
  let summary = "records the time a stream reaches this point, for the step hooks";
  let description = [{
    Names: step_begin, forward_begin, backward_begin, allreduce_begin,
    update_begin, step_end (and *_end where a phase ends apart from the next
    one's begin).
  }];
  let arguments = (ins StrAttr:$name, Exec_StreamAttr:$stream);
  let assemblyFormat = "$name `on` $stream attr-dict";
}

def Exec_OutputOp : Exec_Op<"output", [HasParent<"ProgramOp">]> {
  let summary = "a named scalar the step reports (loss, accuracy), per replica";
  let arguments = (ins StrAttr:$name, I64Attr:$replica, Exec_Buffer:$value);
  let assemblyFormat = "$name `replica` `=` $replica $value attr-dict `:` type($value)";
}

#endif // EXEC_OPS_TD
