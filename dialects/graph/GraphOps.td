//===- GraphOps.td - graph dialect ops ---------------------*- tablegen -*-===//
//
// Layer ops are primitive (a Keras Conv2D with bias and relu imports as
// conv2d, bias_add, relu); fusion builds the fused forms later. Every op whose
// result shape follows from its operands implements InferTypeOpInterface, so
// a builder needs no result type and the verifier checks the declared one.
//
//===----------------------------------------------------------------------===//

#ifndef GRAPH_OPS_TD
#define GRAPH_OPS_TD

include "dialects/graph/GraphDialect.td"
include "dialects/graph/GraphAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Graph_StaticShapePred
    : CPred<"::llvm::cast<::mlir::ShapedType>($_self).hasStaticShape()">;

def Graph_FloatTensor : Type<And<[RankedTensorOf<[AnyFloat]>.predicate,
                                  Graph_StaticShapePred]>,
                             "statically shaped tensor of floats",
                             "::mlir::RankedTensorType">;

def Graph_AnyTensor : Type<And<[RankedTensorOf<[AnyFloat, AnySignlessInteger]>.predicate,
                                Graph_StaticShapePred]>,
                           "statically shaped tensor of floats or integers",
                           "::mlir::RankedTensorType">;

def Graph_Scalar : 0DTensorOf<[AnyFloat]>;

def Graph_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;

//===----------------------------------------------------------------------===//
// Structure: variables, models, inputs, outputs, training configuration
//===----------------------------------------------------------------------===//

def Graph_VariableOp : Graph_Op<"variable", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a model weight: a named, initialised, mutable tensor";
  let description = [{
    Variables are named `<layer name>/<weight name>` as Keras names them, in
    Keras' layouts (conv kernels HWIO, dense kernels `[in, out]`), so weights
    saved by Keras map one to one.

    ```mlir
    graph.variable @"conv2d/kernel" : tensor<3x3x1x32xf32> = #graph.init<glorot_uniform>
    graph.variable @"dense/bias" : tensor<64xf32> = #graph.init<zeros> {trainable = false}
    ```

    `trainable = false` (a frozen layer, or a statistic such as batch norm's
    moving mean) means the variable receives no gradient.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Graph_FloatTensor>:$type,
                       Graph_InitializerAttr:$initializer,
                       DefaultValuedAttr<BoolAttr, "true">:$trainable);
  let assemblyFormat = "$sym_name `:` $type `=` qualified($initializer) attr-dict";
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Graph_ReadVariableOp : Graph_Op<"read_variable", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the current value of a variable";
  let arguments = (ins FlatSymbolRefAttr:$variable);
  let results = (outs Graph_FloatTensor:$value);
  let assemblyFormat = "$variable attr-dict `:` type($value)";
}

def Graph_ModelOp : Graph_Op<"model", [Symbol, IsolatedFromAbove, SingleBlock,
    HasParent<"::mlir::ModuleOp">]> {
  let summary = "the forward computation of a model";
  let description = [{
    One block of layer ops that reads `graph.input`s and variables and ends
    with `graph.output`. Isolated from above: variables are reached through
    their symbols, never through captured values.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
    /// The model's outputs, in the order `graph.output` lists them.
    OutputOp getOutputOp();
    /// The model's inputs, in the order they appear.
    ::llvm::SmallVector<InputOp> getInputOps();
  }];
}

def Graph_InputOp : Graph_Op<"input", [HasParent<"ModelOp">]> {
  let summary = "a model input, fed from the data pipeline";
  let description = [{
    ```mlir
    %x = graph.input "input_layer" : tensor<256x28x28x1xf32>
    ```
    The leading dimension is the batch.
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Graph_AnyTensor:$output);
  let assemblyFormat = "$name attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_OutputOp : Graph_Op<"output", [Terminator, HasParent<"ModelOp">, Pure]> {
  let summary = "the values a model returns";
  let arguments = (ins Variadic<Graph_AnyTensor>:$outputs);
  let assemblyFormat = "attr-dict ($outputs^ `:` type($outputs))?";
}

def Graph_TrainingOp : Graph_Op<"training", [HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "how a model is trained: loss, optimizer, metrics, batch";
  let description = [{
    ```mlir
    graph.training @cnn loss = categorical_crossentropy
        optimizer = #graph.adam<learning_rate = 0.001>
        metrics = ["accuracy"] global_batch_size = 256
    ```
    The loss is the mean over the global batch. `from_logits` says the
    model's output is logits rather than probabilities.
  }];
  let arguments = (ins FlatSymbolRefAttr:$model,
                       Graph_LossKindAttr:$loss,
                       UnitAttr:$from_logits,
                       AnyAttrOf<[Graph_SGDAttr, Graph_AdamAttr, Graph_RMSpropAttr]>:$optimizer,
                       StrArrayAttr:$metrics,
                       ConfinedAttr<I64Attr, [IntPositive]>:$global_batch_size);
  let assemblyFormat = [{
    $model `loss` `=` `` $loss (`from_logits` $from_logits^)?
    `optimizer` `=` $optimizer `metrics` `=` $metrics
    `global_batch_size` `=` $global_batch_size attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The learning rate of whichever optimizer this is.
    double getLearningRate();
  }];
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

def Graph_Conv2DOp : Graph_Op<"conv2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D convolution, NHWC input, HWIO kernel (Keras Conv2D)";
  let description = [{
    ```mlir
    %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1]
        : (tensor<8x28x28x1xf32>, tensor<3x3x1x32xf32>) -> tensor<8x26x26x32xf32>
    ```
    No bias and no activation: those are `graph.bias_add` and an activation op.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $kernel `strides` `=` $strides `padding` `=` `` $padding
    `dilations` `=` $dilations attr-dict `:` functional-type(operands, results)
  }];
}

class Graph_Pool2DOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = what # " pooling over H and W, NHWC";
  let arguments = (ins Graph_FloatTensor:$input, Graph_Pair:$pool_size,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `pool_size` `=` $pool_size `strides` `=` $strides
    `padding` `=` `` $padding attr-dict `:` type($input) `->` type($output)
  }];
}
def Graph_MaxPool2DOp : Graph_Pool2DOp<"max_pool2d", "max">;
def Graph_AvgPool2DOp : Graph_Pool2DOp<"avg_pool2d", "average"> {
  let description = [{
    With `same` padding, padded positions are excluded from the average, as
    Keras does.
  }];
}

def Graph_GlobalAvgPool2DOp
    : Graph_Op<"global_avg_pool2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "mean over H and W: NHWC to NC";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
}

def Graph_DenseOp : Graph_Op<"dense", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product over the last axis: x[..., K] * kernel[K, N]";
  let description = [{
    Keras Dense without bias and activation (`graph.bias_add` and an
    activation op follow it).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input `,` $kernel attr-dict `:` functional-type(operands, results)";
}

def Graph_BiasAddOp : Graph_Op<"bias_add", [Pure, InferTypeOpAdaptor]> {
  let summary = "adds a bias along the last (channel) axis";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$bias);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
}

class Graph_UnaryOp<string mnemonic, string what, dag attrs = (ins)>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what;
  let arguments = !con((ins Graph_FloatTensor:$input), attrs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "max(x, 0)">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "hyperbolic tangent">;
def Graph_EluOp : Graph_UnaryOp<"elu", "x if x > 0 else alpha * (exp(x) - 1)",
    (ins DefaultValuedAttr<F64Attr, "1.0">:$alpha)>;
def Graph_LeakyReluOp : Graph_UnaryOp<"leaky_relu", "x if x > 0 else alpha * x",
    (ins DefaultValuedAttr<F64Attr, "0.2">:$alpha)>;
def Graph_GeluOp : Graph_UnaryOp<"gelu",
    "x * Phi(x), exact (erf) or with the tanh approximation",
    (ins UnitAttr:$approximate)>;
def Graph_SoftmaxOp : Graph_UnaryOp<"softmax", "softmax along `axis`",
    (ins DefaultValuedAttr<I64Attr, "-1">:$axis)> {
  let hasVerifier = 1;
}
def Graph_DropoutOp : Graph_UnaryOp<"dropout",
    "inverted dropout in training (keep with probability 1 - rate, scale by "
    "1 / (1 - rate)); identity in evaluation",
    (ins F64Attr:$rate, I64Attr:$seed)> {
  let hasVerifier = 1;
}

def Graph_FlattenOp : Graph_Op<"flatten", [Pure, InferTypeOpAdaptor]> {
  let summary = "collapses every axis but the batch axis";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure]> {
  let summary = "reshapes every axis but the batch axis (Keras Reshape)";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_AddOp : Graph_Op<"add", [Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum of two or more tensors (Keras Add)";
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_ConcatenateOp : Graph_Op<"concatenate", [Pure, InferTypeOpAdaptor]> {
  let summary = "joins two or more tensors along `axis` (Keras Concatenate)";
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type($inputs, results)
  }];
}

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure, AttrSizedOperandSegments,
    InferTypeOpAdaptor]> {
  let summary = "batch normalisation over the last (channel) axis";
  let description = [{
    In training, normalises with the batch's statistics and updates the
    moving mean and variance (`moving = moving * momentum + batch * (1 -
    momentum)`); in evaluation, normalises with the moving statistics.
    `gamma` and `beta` are absent when Keras' `scale` or `center` is false.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Graph_FloatTensor:$moving_mean,
                       Graph_FloatTensor:$moving_variance,
                       Optional<Graph_FloatTensor>:$gamma,
                       Optional<Graph_FloatTensor>:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.99">:$momentum);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $moving_mean `,` $moving_variance
    (`gamma` $gamma^)? (`beta` $beta^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Losses and metrics
//===----------------------------------------------------------------------===//

class Graph_LossOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = what # ", mean over the batch";
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_AnyTensor:$labels,
                       UnitAttr:$from_logits);
  let results = (outs Graph_Scalar:$loss);
  let assemblyFormat = [{
    $predictions `,` $labels (`from_logits` $from_logits^)? attr-dict
    `:` type($predictions) `,` type($labels) `->` type($loss)
  }];
}

def Graph_CategoricalCrossentropyOp
    : Graph_LossOp<"categorical_crossentropy",
                   "cross-entropy against one-hot labels [B, C]">;
def Graph_SparseCategoricalCrossentropyOp
    : Graph_LossOp<"sparse_categorical_crossentropy",
                   "cross-entropy against integer class labels [B]">;

def Graph_AccuracyOp : Graph_Op<"accuracy", [Pure, InferTypeOpAdaptor]> {
  let summary = "fraction of the batch whose arg-max matches the label";
  let description = [{
    Labels are one-hot (`[B, C]`, float) or class indices (`[B]`, integer),
    as Keras' `accuracy` resolves to categorical or sparse accuracy.
  }];
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_AnyTensor:$labels);
  let results = (outs Graph_Scalar:$accuracy);
  let assemblyFormat = [{
    $predictions `,` $labels attr-dict `:` type($predictions) `,` type($labels)
    `->` type($accuracy)
  }];
}

#endif // GRAPH_OPS_TD
