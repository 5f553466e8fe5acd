//===- DistOps.td - dist dialect ops -----------------------*- tablegen -*-===//

#ifndef DIST_OPS_TD
#define DIST_OPS_TD

include "dialects/dist/DistDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Dist_Tensor : Type<And<[RankedTensorOf<[AnyFloat]>.predicate,
    CPred<"::llvm::cast<::mlir::ShapedType>($_self).hasStaticShape()">]>,
    "statically shaped tensor of floats", "::mlir::RankedTensorType">;

def Dist_AllReduceOp : Dist_Op<"all_reduce", [Pure,
    RangedTypesMatchWith<"results mirror the operands", "inputs", "outputs", "$_self">]> {
  let summary = "reduces one tensor per replica; every replica gets the result";
  let description = [{
    Operand r comes from replica r; result r is delivered on replica r.
    Operands must agree in shape and element type: a mismatch found here is a
    hang avoided at run time.

    ```mlir
    %r0, %r1 = dist.all_reduce mean %b0, %b1 {bucket = 0 : i64}
        : tensor<18816xf32>, tensor<18816xf32>
    ```
  }];
  let arguments = (ins Dist_ReduceKindAttr:$kind, Variadic<Dist_Tensor>:$inputs,
                       OptionalAttr<I64Attr>:$bucket);
  let results = (outs Variadic<Dist_Tensor>:$outputs);
  let assemblyFormat = "`` $kind $inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "ReduceKind":$kind, "::mlir::ValueRange":$inputs,
                   "int64_t":$bucket)>
  ];
}

def Dist_BroadcastOp : Dist_Op<"broadcast", [Pure,
    RangedTypesMatchWith<"results mirror the operands", "inputs", "outputs", "$_self">]> {
  let summary = "copies replica `root`'s tensor to every replica";
  let arguments = (ins Variadic<Dist_Tensor>:$inputs, I64Attr:$root);
  let results = (outs Variadic<Dist_Tensor>:$outputs);
  let assemblyFormat = "$inputs `root` `=` $root attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Dist_PackOp : Dist_Op<"pack", [Pure]> {
  let summary = "lays tensors out back to back in one flat bucket";
  let description = [{
    The memory planner places each operand inside the bucket's buffer, so
    the producers write their gradients in place and the pack copies
    nothing.
  }];
  let arguments = (ins Variadic<Dist_Tensor>:$inputs);
  let results = (outs Dist_Tensor:$bucket);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($bucket)";
  let hasVerifier = 1;
}

def Dist_UnpackOp : Dist_Op<"unpack", [Pure]> {
  let summary = "views a flat bucket as the tensors packed into it";
  let arguments = (ins Dist_Tensor:$bucket);
  let results = (outs Variadic<Dist_Tensor>:$outputs);
  let assemblyFormat = "$bucket attr-dict `:` type($bucket) `->` type($outputs)";
  let hasVerifier = 1;
}

#endif // DIST_OPS_TD
