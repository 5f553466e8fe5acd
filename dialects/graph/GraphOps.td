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

// An op whose result is a sum over its replica's rows that every replica
// must read as the sum over the global batch: dist-replicate adds the
// replicas' results (dist.all_reduce sum) before anything reads them.
def Graph_SummedAcrossReplicas : NativeOpTrait<"SummedAcrossReplicas"> {
  let cppNamespace = "::mlir::graph";
}

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

    A variable stored in another layout than Keras' (set by
    graph-assign-filter-layout) names its Keras form: `logical_shape` is
    Keras' shape and `logical_permutation` how the stored value is
    transposed from it (stored axis i is Keras axis permutation[i]); its
    type holds the same elements in that order. Initializers, checkpoints
    and weight files speak of the Keras form; the runtime converts.

    ```mlir
    graph.variable @"conv2d/kernel" : tensor<32x3x3x1xf32> = #graph.init<glorot_uniform>
        {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 1, 32>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Graph_FloatTensor>:$type,
                       Graph_InitializerAttr:$initializer,
                       DefaultValuedAttr<BoolAttr, "true">:$trainable,
                       OptionalAttr<DenseI64ArrayAttr>:$logical_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$logical_permutation);
  let assemblyFormat = "$sym_name `:` $type `=` qualified($initializer) attr-dict";
  let hasVerifier = 1;
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
  let description = [{
    In a training or evaluation step, `names` names each value as the
    runtime reports it ("loss", "accuracy", "grad_norm"); in a model of
    several outputs, each output (Keras' output layers, which name the
    output's labels and logs). A replicated step
    returns every replica's values, replica after replica, under the same
    names: the value count is then a multiple of the name count.
  }];
  let arguments = (ins Variadic<Graph_AnyTensor>:$outputs,
                       OptionalAttr<StrArrayAttr>:$names);
  let assemblyFormat = "attr-dict ($outputs^ `:` type($outputs))?";
  let hasVerifier = 1;
}

def Graph_TrainingOp : Graph_Op<"training", [HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "how a model is trained: losses, metrics, optimizer, batch";
  let description = [{
    ```mlir
    graph.training @cnn losses = [#graph.output_loss<kind = categorical_crossentropy,
          metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>]
        optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9,
                                beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false>
        global_batch_size = 256
    ```
    `losses` holds one #graph.output_loss per output of the model, in the model's
    output order: what Keras' compile() gives each output (its loss and
    options, its loss weight, its metrics). The training loss is the sum of
    the outputs' losses times their weights; each output's loss is its mean
    over the global batch (`sum_over_batch_size`) or, with `sum_reduction`,
    its sum: the mean times the global batch. With replicas each replica's
    gradient of a summed loss is its own sum times the number of replicas,
    and their average the sum over the global batch, as under
    MirroredStrategy (Keras does not scale a "sum" loss by 1 / replicas,
    and sums the replicas' gradients). A model of several outputs names
    them (its graph.output's `names`, Keras' output layers): the logs then
    carry `<output>_loss` for each output's loss (its weight left out, as
    Keras logs it) and `<output>_<metric>` for its metrics.

    `ema_momentum` (Keras' `use_ema`) keeps an exponential moving average
    of each trained variable in slot `average`, updated after every step
    (`graph.ema_update`); with `ema_overwrite_frequency` N the variables
    take the average every N-th step; at the end of training the runtime
    replaces the variables with their averages, as Keras' fit does
    (`finalize_variable_values`).

    `loss_scale` (Keras' LossScaleOptimizer, which compile wraps around the
    optimizer of a mixed_float16 model) is the initial dynamic loss scale
    and `loss_scale_growth_steps` the finite steps after which it doubles.
    graph-build-training-step scales the loss of a model that computes in
    float16 even without them (Keras' defaults: 2^15 and 2000); with them it
    scales any model's. `no_auto_loss_scale` says the model's own policy is
    known not to be mixed_float16 (a float32 model with a layer of dtype
    mixed_float16): Keras' compile then wraps nothing, and the loss is not
    scaled for its float16 layers (graphc --precision mixed_float16, the
    model's policy replaced, removes it).
  }];
  let arguments = (ins FlatSymbolRefAttr:$model,
                       TypedArrayAttrBase<Graph_OutputLossAttr,
                                          "one #graph.output_loss per output">:$losses,
                       OptionalAttr<F64Attr>:$ema_momentum,
                       OptionalAttr<I64Attr>:$ema_overwrite_frequency,
                       OptionalAttr<F64Attr>:$loss_scale,
                       OptionalAttr<I64Attr>:$loss_scale_growth_steps,
                       UnitAttr:$no_auto_loss_scale,
                       AnyAttrOf<[Graph_SGDAttr, Graph_AdamAttr,
                                  Graph_RMSpropAttr, Graph_AdagradAttr,
                                  Graph_AdamaxAttr, Graph_NadamAttr]>:$optimizer,
                       ConfinedAttr<I64Attr, [IntPositive]>:$global_batch_size);
  let assemblyFormat = [{
    $model `losses` `=` $losses
    (`ema_momentum` `=` $ema_momentum^)?
    (`ema_overwrite_frequency` `=` $ema_overwrite_frequency^)?
    (`loss_scale` `=` $loss_scale^)?
    (`loss_scale_growth_steps` `=` $loss_scale_growth_steps^)?
    (`no_auto_loss_scale` $no_auto_loss_scale^)?
    `optimizer` `=` $optimizer
    `global_batch_size` `=` $global_batch_size attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The learning rate of whichever optimizer this is.
    double getLearningRate();
    /// The losses, one per output.
    ::llvm::SmallVector<OutputLossAttr> getLossList();
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

    `groups` (Keras Conv2D's `groups`, TensorFlow's feature_group_count)
    splits the C input channels and the F filters into that many groups;
    group g's filters see only its C / groups channels. The kernel is then
    [kh, kw, C / groups, F] and filter f belongs to group f / (F / groups),
    Keras' Conv2D layout. A depthwise convolution is groups = C; it also
    takes Keras' DepthwiseConv2D kernel [kh, kw, C, m] as it is, which is
    the same memory as [kh, kw, 1, C * m] (output channel c * m + j), so
    the variable keeps Keras' shape and no reshape sits between it and the
    convolution (nor its gradient). The gradient ops take the same kernel
    forms.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $kernel `strides` `=` $strides `padding` `=` `` $padding
    `dilations` `=` $dilations (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)? attr-dict
    `:` functional-type(operands, results)
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

def Graph_PadOp : Graph_Op<"pad", [Pure, InferTypeOpAdaptor]> {
  let summary = "zero-pads (positive amounts) or crops (negative) each axis";
  let description = [{
    Axis `d` of the output has `low[d] + input[d] + high[d]` entries: a
    positive amount adds zeros before (`low`) or after (`high`) the input, a
    negative one drops that many entries. Keras ZeroPadding2D and Cropping2D
    are `pad`s of H and W; the gradient of `pad(low, high)` is
    `pad(-low, -high)`. The batch axis is neither padded nor cropped.
    ```mlir
    %y = graph.pad %x low = [0, 1, 2, 0] high = [0, 1, -1, 0]
        : tensor<8x5x5x3xf32> -> tensor<8x7x6x3xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `low` `=` $low `high` `=` $high attr-dict
    `:` type($input) `->` type($output)
  }];
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permutes the axes: output axis d is input axis permutation[d]";
  let description = [{
    Keras Permute (whose `dims` leave the batch axis first). The gradient is
    the transpose by the inverse permutation.
    ```mlir
    %y = graph.transpose %x permutation = [0, 2, 1, 3]
        : tensor<8x4x5x3xf32> -> tensor<8x5x4x3xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict
    `:` type($input) `->` type($output)
  }];
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
def Graph_ClippedReluOp : Graph_UnaryOp<"clipped_relu",
    "min(x, max_value) if x > threshold else negative_slope * (x - threshold)",
    (ins OptionalAttr<F64Attr>:$max_value,
         DefaultValuedAttr<F64Attr, "0.0">:$negative_slope,
         DefaultValuedAttr<F64Attr, "0.0">:$threshold)> {
  let description = [{
    Keras' ReLU layer with its `max_value`, `negative_slope` and `threshold`
    (all >= 0), and the `relu6` activation (`max_value = 6`). Without
    `max_value` there is no cap.
  }];
}
def Graph_SiluOp : Graph_UnaryOp<"silu", "x * sigmoid(x) (Keras silu, swish)">;
def Graph_HardSigmoidOp : Graph_UnaryOp<"hard_sigmoid",
    "relu6(x + 3) / 6 (Keras 3's hard_sigmoid)">;
def Graph_HardSiluOp : Graph_UnaryOp<"hard_silu",
    "x * relu6(x + 3) / 6 (Keras hard_silu, hard_swish)">;
def Graph_SoftmaxOp : Graph_UnaryOp<"softmax", "softmax along `axis`",
    (ins DefaultValuedAttr<I64Attr, "-1">:$axis)> {
  let hasVerifier = 1;
}
def Graph_DropoutOp : Graph_UnaryOp<"dropout",
    "inverted dropout in training (keep with probability 1 - rate, scale by "
    "1 / (1 - rate)); identity in evaluation",
    (ins F64Attr:$rate, I64Attr:$seed,
         OptionalAttr<DenseI64ArrayAttr>:$noise_shape)> {
  let description = [{
    With `noise_shape` (one dimension per input axis after the batch axis,
    each 1 or the input's: the batch axis is never shared, so the attribute
    holds no batch size and replicas keep it), one mask element is drawn per
    element of `[batch] + noise_shape` and repeated along its unit axes
    (Keras' noise_shape, SpatialDropout2D): the mask element's index within
    that shape takes the place of the element's index in the hash.
  }];
  let hasVerifier = 1;
}

// Keras' random image layers. The draws are keyed by (seed, run seed, step,
// global image) like dropout's mask (runtime/core/ImageTransform.h), so the
// gradient regenerates them and replica count does not change them.
defvar Graph_ImageTransformAttrs = (ins StrAttr:$kind, I64Attr:$seed,
    OptionalAttr<StrAttr>:$mode, OptionalAttr<F64ArrayAttr>:$factor,
    OptionalAttr<F64ArrayAttr>:$height_factor,
    OptionalAttr<F64ArrayAttr>:$width_factor,
    DefaultValuedAttr<StrAttr, "\"reflect\"">:$fill_mode,
    DefaultValuedAttr<StrAttr, "\"bilinear\"">:$interpolation,
    DefaultValuedAttr<F64Attr, "0.0">:$fill_value);

def Graph_RandomImageTransformOp : Graph_Op<"random_image_transform",
    [Pure]> {
  let summary = "a per-image random affine resampling (Keras RandomFlip, "
                "RandomRotation, RandomZoom, RandomTranslation, RandomCrop)";
  let description = [{
    In training each NHWC image is resampled at an affine image of the
    output coordinates drawn per image (per batch for `crop`), with
    TensorFlow's fill modes (reflect, wrap, constant, nearest) and
    interpolations (bilinear, nearest). `kind` says how the matrix is drawn:
    `flip` (`mode`: horizontal, vertical, horizontal_and_vertical),
    `rotation` (`factor`: [lower, upper] in turns), `zoom` and `translation`
    (`height_factor`, `width_factor`: [lower, upper] fractions; a zoom
    without `width_factor` zooms both axes alike), `crop` (a random window
    of the output's size) and `center_crop` (the centred window of the
    output's aspect ratio, resized: what `crop` is in evaluation). The
    evaluation program drops every kind but `crop`, which becomes
    `center_crop`.
    ```mlir
    %y = graph.random_image_transform %x {kind = "rotation", seed = 7 : i64,
        factor = [-0.1, 0.1]} : tensor<8x32x32x3xf32> -> tensor<8x32x32x3xf32>
    ```
  }];
  let arguments = !con((ins Graph_FloatTensor:$input),
                       Graph_ImageTransformAttrs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_RandomContrastOp : Graph_UnaryOp<"random_contrast",
    "per image and channel, clip((x - mean) * f + mean, value_range) with f "
    "drawn per image in contrast_range (Keras RandomContrast); identity in "
    "evaluation",
    (ins I64Attr:$seed, F64ArrayAttr:$contrast_range,
         F64ArrayAttr:$value_range)> {
  let hasVerifier = 1;
}

def Graph_FlattenOp : Graph_Op<"flatten", [Pure, InferTypeOpAdaptor]> {
  let summary = "collapses every axis but the batch axis";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
}

def Graph_CastOp : Graph_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "converts floats to another float type, rounding to nearest even";
  let description = [{
    The casts of a mixed-precision model (graph-assign-precision makes
    them): a float32 weight or input to the layer's compute type (bfloat16,
    float16), and a reduced-precision activation to float32 where Keras
    computes in float32 (batch normalisation, the loss). Narrowing rounds
    to nearest, ties to even, as TensorFlow's Cast does; widening is exact.
    Its gradient is the cast of the output gradient back.
  }];
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

def Graph_MultiplyOp : Graph_Op<"multiply", [Pure, Commutative,
    SameOperandsAndResultType]> {
  let summary = "elementwise product of two or more tensors (Keras Multiply)";
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_MaximumOp : Graph_Op<"maximum", [Pure, Commutative,
    SameOperandsAndResultType]> {
  let summary = "elementwise maximum of two or more tensors (Keras Maximum)";
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Graph_ScaleShiftOp : Graph_UnaryOp<"scale_shift", "x * scale + offset",
    (ins F64Attr:$scale, DefaultValuedAttr<F64Attr, "0.0">:$offset)> {
  let description = [{
    Keras Rescaling; also the negation in Subtract and the 1/n of Average.
  }];
}

def Graph_ChannelScaleShiftOp : Graph_Op<"channel_scale_shift", [Pure,
    SameOperandsAndResultType]> {
  let summary = "x * scale[c] + offset[c] per channel c of the last axis";
  let description = [{
    Keras' Rescaling with per-channel lists (EfficientNet's 1 / sqrt(stddev)
    per RGB channel) and Normalization with per-channel mean and variance in
    its config: constants, one per channel (or one for all). The gradient
    is this op with the scale and no offset.
  }];
  let arguments = (ins Graph_FloatTensor:$input, DenseF64ArrayAttr:$scale,
                       DenseF64ArrayAttr:$offset);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_BroadcastOp : Graph_Op<"broadcast", [Pure]> {
  let summary = "repeats the unit axes of a tensor up to the result's shape";
  let description = [{
    Keras' broadcasting merges (a squeeze-and-excite Multiply of `[N, 1, 1,
    C]` by `[N, H, W, C]`): input and result have one rank, and each input
    dimension is 1 or the result's. Its gradient is graph.sum_to.
  }];
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_SumToOp : Graph_Op<"sum_to", [Pure]> {
  let summary = "sums a tensor over the axes where the result has 1";
  let description = [{
    The gradient of graph.broadcast: input and result have one rank, and
    each result dimension is 1 or the input's.
  }];
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Graph_NormalizeOp : Graph_Op<"normalize", [Pure]> {
  let summary = "(x - mean) / max(sqrt(variance), epsilon) per channel";
  let description = [{
    Keras' Normalization layer over the last axis: `mean` and `variance`
    have one element per channel of the last axis. Without `mean` it is 0:
    so the gradient, dx = dy / max(sqrt(variance), epsilon), is this op too.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$variance,
                       Optional<Graph_FloatTensor>:$mean,
                       DefaultValuedAttr<F64Attr, "1.0e-7">:$epsilon);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $variance (`mean` $mean^)? attr-dict
    `:` functional-type(operands, results)
  }];
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
    The batch variance that updates the moving variance is the biased one
    (Keras 3's `ops.moments`), or with `unbiased_moving_variance` the
    unbiased one (`n / (n - 1)` times it), as tf.keras 2's fused kernel
    does for 4-D inputs: the importer sets it from the Keras version.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Graph_FloatTensor:$moving_mean,
                       Graph_FloatTensor:$moving_variance,
                       Optional<Graph_FloatTensor>:$gamma,
                       Optional<Graph_FloatTensor>:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.99">:$momentum,
                       UnitAttr:$unbiased_moving_variance);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $moving_mean `,` $moving_variance
    (`gamma` $gamma^)? (`beta` $beta^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_ChannelScaleOp : Graph_Op<"channel_scale", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "x * scale, one scale per channel of the last axis";
  let description = [{
    Keras' LayerScale (ConvNeXt): `y[..., c] = x[..., c] * scale[c]`. Its
    gradients are `channel_scale(dy, scale)` for x and
    `bias_add_grad(multiply(dy, x))` for scale.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure, AttrSizedOperandSegments,
    InferTypeOpAdaptor]> {
  let summary = "layer normalisation over the last axis";
  let description = [{
    Keras' LayerNormalization with `axis = -1`: each row of the last axis
    is normalised with its own mean and (biased) variance,
    `y = (x - mean) / sqrt(var + epsilon) * gamma + beta`, the same in
    training and evaluation. `gamma` and `beta` ([C]) are absent when
    Keras' `scale` or `center` is false.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$gamma,
                       Optional<Graph_FloatTensor>:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$epsilon);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input (`gamma` $gamma^)? (`beta` $beta^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Losses and metrics
//===----------------------------------------------------------------------===//

class Graph_LossOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = what # ", mean over the batch";
  let description = [{
    With `sample_weight` (`[batch]`, float) the result is the weighted sum
    over the batch divided by the batch size, Keras' `sum_over_batch_size`
    reduction: the evaluation step weights the padding rows of a last,
    partial batch with 0, so every example counts once.
  }];
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_AnyTensor:$labels,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       UnitAttr:$from_logits);
  let results = (outs Graph_Scalar:$loss);
  let assemblyFormat = [{
    $predictions `,` $labels (`weights` $sample_weight^)?
    (`from_logits` $from_logits^)? attr-dict
    `:` type($predictions) `,` type($labels) (`,` type($sample_weight)^)?
    `->` type($loss)
  }];
}

def Graph_CategoricalCrossentropyOp
    : Graph_LossOp<"categorical_crossentropy",
                   "cross-entropy against one-hot labels [B, C]">;
def Graph_SparseCategoricalCrossentropyOp
    : Graph_LossOp<"sparse_categorical_crossentropy",
                   "cross-entropy against integer class labels [B]">;

def Graph_PointwiseLossOp
    : Graph_Op<"pointwise_loss", [Pure, InferTypeOpAdaptor]> {
  let summary = "a Keras loss computed element by element, mean over the batch";
  let description = [{
    ```mlir
    %l = graph.pointwise_loss huber %p, %t delta = 1.5
        : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
    ```
    Every Keras loss that compares each prediction with its target (mean
    squared error, binary cross-entropy, Huber, ...; `kind`), as Keras
    computes it: the per-sample loss is the mean of f(p, t) over the last
    axis (the sum for `kl_divergence`), and the result their mean over the
    batch (`sum_over_batch_size`; with `sample_weight` [batch], each
    sample's loss weighted, still divided by the batch). Targets have the
    predictions' shape. `from_logits` and `label_smoothing` (mixing the
    targets with 0.5) are binary_crossentropy's, `delta` is huber's.

    Binary focal cross-entropy is element-wise too (`gamma`; `alpha` with
    `apply_class_balancing`; `from_logits`, `label_smoothing`). Three kinds
    are functions of a whole row of the last axis rather than of one
    element: categorical_focal_crossentropy (`alpha`, `gamma`,
    `from_logits`, `label_smoothing` towards 1 / K), cosine_similarity and
    categorical_hinge; each row gives one loss and the result is their mean.
    They are kinds of this op rather than ops of their own because they
    share everything around the formula: the targets of the predictions'
    shape, the options, the mean over the batch and its weights, the
    gradient op, the replication and every backend's launch checks. Dice
    and Tversky are not: one ratio of sums over the whole batch
    (graph.overlap_sums, graph.overlap_loss).
  }];
  let arguments = (ins Graph_LossKindAttr:$kind, Graph_FloatTensor:$predictions,
                       Graph_FloatTensor:$targets,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       UnitAttr:$from_logits,
                       OptionalAttr<F64Attr>:$label_smoothing,
                       OptionalAttr<F64Attr>:$delta,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$gamma,
                       UnitAttr:$apply_class_balancing);
  let results = (outs Graph_Scalar:$loss);
  let assemblyFormat = [{
    `` $kind $predictions `,` $targets (`weights` $sample_weight^)?
    (`from_logits` $from_logits^)?
    (`label_smoothing` `=` $label_smoothing^)? (`delta` `=` $delta^)?
    (`alpha` `=` $alpha^)? (`gamma` `=` $gamma^)?
    (`apply_class_balancing` $apply_class_balancing^)?
    attr-dict `:` type($predictions) `,` type($targets)
    (`,` type($sample_weight)^)? `->` type($loss)
  }];
}

def Graph_OverlapSumsOp
    : Graph_Op<"overlap_sums", [Pure, InferTypeOpAdaptor,
                                Graph_SummedAcrossReplicas]> {
  let summary = "Dice's and Tversky's sums over the batch: t p, t and p";
  let description = [{
    ```mlir
    %s = graph.overlap_sums %p, %t
        : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<5xf32>
    ```
    Keras' dice and tversky with `axis=None` (their default) are one ratio
    of sums over the whole batch, not a mean of per-sample losses: this op
    takes those sums, `[sum t p, sum t, sum p]` over every element (with
    `sample_weight` [batch], over the rows whose weight is not 0: the
    padding of a short batch is left out), then the sum of the weights and
    the number of rows (`[.., sum w, B]`; without weights both are B), and
    graph.overlap_loss and its gradient read them. dist-replicate sums the replicas' sums
    (`dist.all_reduce sum`) before anything reads them, so N replicas
    compute the loss and gradient of the global batch, as one replica does.
  }];
  let arguments = (ins Graph_FloatTensor:$predictions,
                       Graph_FloatTensor:$targets,
                       Optional<Graph_FloatTensor>:$sample_weight);
  let results = (outs Graph_FloatTensor:$sums);
  let assemblyFormat = [{
    $predictions `,` $targets (`weights` $sample_weight^)? attr-dict
    `:` type($predictions) `,` type($targets) (`,` type($sample_weight)^)?
    `->` type($sums)
  }];
}

def Graph_OverlapLossOp
    : Graph_Op<"overlap_loss", [Pure, InferTypeOpAdaptor]> {
  let summary = "Keras' Dice or Tversky loss from graph.overlap_sums";
  let description = [{
    ```mlir
    %l = graph.overlap_loss tversky %s alpha = 0.3 beta = 0.7
        : tensor<3xf32> -> tensor<f32>
    ```
    With I, T, P the sums of t p, t and p: dice is
    `1 - 2 I / (T + P + eps)`, tversky `1 - I / (I + alpha (T - I) +
    beta (P - I) + eps)` (Keras' `fp = sum (1 - p) t` and
    `fn = sum p (1 - t)`; `alpha`, `beta` default to 0.5), eps = 1e-7.
    Keras reduces this one value no further, under any reduction, but for
    the sample weights: the result is multiplied by the weights' mean (the
    sums' `sum w / B`, over every replica's rows), as Keras'
    reduce_weighted_values does. With `sum_reduction` (Keras'
    reduction="sum") it is not: the weights then only leave out the rows
    of weight 0 (an epoch's short batch's padding), so that the value is
    Keras' for a fit without sample weights. (Keras multiplies a summed
    Dice by the sum of the sample weights when there are some, a factor
    that grows with the batch; that case is not followed.)
  }];
  let arguments = (ins Graph_LossKindAttr:$kind, Graph_FloatTensor:$sums,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta,
                       UnitAttr:$sum_reduction);
  let results = (outs Graph_Scalar:$loss);
  let assemblyFormat = [{
    `` $kind $sums (`alpha` `=` $alpha^)?
    (`beta` `=` $beta^)? (`sum_reduction` $sum_reduction^)? attr-dict
    `:` type($sums) `->` type($loss)
  }];
}

def Graph_OverlapLossGradOp
    : Graph_Op<"overlap_loss_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of graph.overlap_loss by the predictions";
  let description = [{
    ```mlir
    %g = graph.overlap_loss_grad dice %t, %s
        : tensor<8x3xf32>, tensor<3xf32> -> tensor<8x3xf32>
    ```
    d loss / d p_i, which is `a t_i + b` with a and b from the sums: dice
    `a = -2 / D`, `b = 2 I / D^2` (D = T + P + eps); tversky
    `a = -1 / D + I (1 - alpha - beta) / D^2`, `b = I beta / D^2`, times
    the weights' mean `sum w / B` of the sums. The predictions themselves
    enter through the sums only. With `sample_weight` [batch], a row whose
    weight is 0 (which the sums left out) has gradient 0. `replicas` N
    (dist-replicate sets it) multiplies the gradient by N: each replica
    holds its rows' part of the one global loss's gradient, and the
    replicas' gradients are averaged. `sum_reduction` leaves the weights'
    mean out, as graph.overlap_loss does.
  }];
  let arguments = (ins Graph_LossKindAttr:$kind, Graph_FloatTensor:$targets,
                       Graph_FloatTensor:$sums,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta,
                       OptionalAttr<I64Attr>:$replicas,
                       UnitAttr:$sum_reduction);
  let results = (outs Graph_FloatTensor:$predictions_grad);
  let assemblyFormat = [{
    `` $kind $targets `,` $sums (`weights` $sample_weight^)?
    (`alpha` `=` $alpha^)? (`beta` `=` $beta^)?
    (`sum_reduction` $sum_reduction^)?
    attr-dict `:` type($targets) `,` type($sums)
    (`,` type($sample_weight)^)? `->` type($predictions_grad)
  }];
}

def Graph_SampleOverlapLossOp
    : Graph_Op<"sample_overlap_loss", [Pure, InferTypeOpAdaptor]> {
  let summary = "Keras' Dice or Tversky with an axis: a ratio per sample";
  let description = [{
    ```mlir
    %l = graph.sample_overlap_loss dice %p, %t axis = [1, 2]
        : tensor<8x4x3xf32>, tensor<8x4x3xf32> -> tensor<f32>
    ```
    Keras' dice and tversky with `axis` set: the sums I = sum t p,
    T = sum t, P = sum p are taken over `axis` (positive, never the batch)
    for each sample and each position of the axes left, each group's loss
    is graph.overlap_loss' formula of its sums, and the result is the mean
    over the batch and those positions (`sum_over_batch_size`), each
    sample's groups weighted by its `sample_weight`.
  }];
  let arguments = (ins Graph_LossKindAttr:$kind,
                       Graph_FloatTensor:$predictions,
                       Graph_FloatTensor:$targets,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       DenseI64ArrayAttr:$axis,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta);
  let results = (outs Graph_Scalar:$loss);
  let assemblyFormat = [{
    `` $kind $predictions `,` $targets (`weights` $sample_weight^)?
    `axis` `=` $axis (`alpha` `=` $alpha^)? (`beta` `=` $beta^)? attr-dict
    `:` type($predictions) `,` type($targets) (`,` type($sample_weight)^)?
    `->` type($loss)
  }];
}

def Graph_SampleOverlapLossGradOp : Graph_Op<"sample_overlap_loss_grad", [Pure,
    AllTypesMatch<["predictions", "targets", "predictions_grad"]>]> {
  let summary = "gradient of graph.sample_overlap_loss";
  let description = [{
    Each element's gradient is `a t + b`, with a and b from its group's sums
    (graph.overlap_loss_grad's formulas), times its sample's weight over
    the number of groups.
  }];
  let arguments = (ins Graph_LossKindAttr:$kind,
                       Graph_FloatTensor:$predictions,
                       Graph_FloatTensor:$targets,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       DenseI64ArrayAttr:$axis,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$beta);
  let results = (outs Graph_FloatTensor:$predictions_grad);
  let assemblyFormat = [{
    `` $kind $predictions `,` $targets (`weights` $sample_weight^)?
    `axis` `=` $axis (`alpha` `=` $alpha^)? (`beta` `=` $beta^)? attr-dict
    `:` type($predictions) (`,` type($sample_weight)^)?
  }];
  let hasVerifier = 1;
}

def Graph_KeptRowsOp : Graph_Op<"kept_rows", [Pure, InferTypeOpAdaptor,
    Graph_SummedAcrossReplicas]> {
  let summary = "the rows an ignore_class leaves in, and the rows";
  let description = [{
    ```mlir
    %n = graph.kept_rows %labels, %metric_weight ignore_class = -1
        : tensor<8xi32>, tensor<8xf32> -> tensor<2xf32>
    ```
    `[K, R]`: R counts the rows that hold examples (`metric_weight` not 0:
    a short batch's padding is left out), K those of them whose label is
    not `ignore_class`. dist-replicate sums them over the replicas, so the
    loss divides by the global batch's kept rows, as one device does.
  }];
  let arguments = (ins Graph_AnyTensor:$labels, Graph_FloatTensor:$metric_weight,
                       I64Attr:$ignore_class);
  let results = (outs Graph_FloatTensor:$counts);
  let assemblyFormat = [{
    $labels `,` $metric_weight `ignore_class` `=` $ignore_class attr-dict
    `:` type($labels) `,` type($metric_weight) `->` type($counts)
  }];
}

def Graph_IgnoreClassOp : Graph_Op<"ignore_class", [Pure, InferTypeOpAdaptor]> {
  let summary = "Keras' ignore_class: labels and weights for the loss";
  let description = [{
    ```mlir
    %l, %w = graph.ignore_class %labels, %sample_weight, %counts
        ignore_class = -1
        : tensor<8xi32>, tensor<8xf32>, tensor<2xf32>
    ```
    As Keras' sparse_categorical_crossentropy with `ignore_class`: a row
    whose label is `ignore_class` gets label 0 and weight 0; the others
    keep theirs, times `R / K` from graph.kept_rows' counts (0 when K is
    0), so that the batch mean becomes the sum over the kept rows divided
    by their number (Keras' apply_mask). With `sum_reduction` the weights
    are not scaled: the sum is over the kept rows.
  }];
  let arguments = (ins Graph_AnyTensor:$labels,
                       Graph_FloatTensor:$sample_weight,
                       Graph_FloatTensor:$counts, I64Attr:$ignore_class,
                       UnitAttr:$sum_reduction);
  let results = (outs Graph_AnyTensor:$kept_labels,
                      Graph_FloatTensor:$weights);
  let assemblyFormat = [{
    $labels `,` $sample_weight `,` $counts `ignore_class` `=` $ignore_class
    (`sum_reduction` $sum_reduction^)? attr-dict
    `:` type($labels) `,` type($sample_weight) `,` type($counts)
  }];
}

def Graph_ConfusionCountsOp
    : Graph_Op<"confusion_counts", [Pure, InferTypeOpAdaptor]> {
  let summary = "weighted true/false positives and negatives per threshold";
  let description = [{
    ```mlir
    %c = graph.confusion_counts %p, %t weights %w num_thresholds = 200
        : tensor<8x1xf32>, tensor<8x1xf32>, tensor<8xf32> -> tensor<4x200xf32>
    ```
    The state of Keras' Precision, Recall and AUC for one batch: rows
    `[tp, fp, tn, fn]`, one column per threshold, each a sum of the rows'
    weights over every (prediction, label) pair of the predictions (a
    label not 0 is positive). With `num_thresholds` T (AUC), Keras' T
    evenly spaced thresholds from -1e-7 to 1 + 1e-7, the predictions
    clipped to [0, 1] (sigmoid first with `from_logits`), as Keras' bucket
    count does; else one `threshold`, a prediction above it positive.
    A row is the predictions' last axis (an example of rank 3 or more has
    several, each weighed by the example's weight): `k` keeps each row's
    k largest predictions (ties to the lower index) and drops the others
    below any threshold; `class_id` counts that column of each row only,
    as Keras' `y_pred[..., class_id]`. The runtime sums the counts of a job's batches and makes
    the metric from them (plan.fbs, Metric).
  }];
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_FloatTensor:$labels,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       OptionalAttr<I64Attr>:$num_thresholds,
                       OptionalAttr<F64Attr>:$threshold,
                       OptionalAttr<I64Attr>:$k,
                       OptionalAttr<I64Attr>:$class_id,
                       UnitAttr:$from_logits);
  let results = (outs Graph_FloatTensor:$counts);
  let assemblyFormat = [{
    $predictions `,` $labels (`weights` $sample_weight^)?
    (`num_thresholds` `=` $num_thresholds^)? (`threshold` `=` $threshold^)?
    (`k` `=` $k^)? (`class_id` `=` $class_id^)?
    (`from_logits` $from_logits^)? attr-dict
    `:` type($predictions) `,` type($labels) (`,` type($sample_weight)^)?
    `->` type($counts)
  }];
}

def Graph_AccuracyOp : Graph_Op<"accuracy", [Pure, InferTypeOpAdaptor]> {
  let summary = "fraction of the batch whose arg-max matches the label";
  let description = [{
    Labels are one-hot (`[B, C]`, float) or class indices (`[B]`, integer),
    as Keras' `accuracy` resolves to categorical or sparse accuracy. With
    `sample_weight` a row counts with its weight (still divided by B), as
    the losses do. With `k` > 1, Keras' (sparse) top-k categorical
    accuracy: a row is a hit when fewer than k classes score more than its
    label (ops.in_top_k; the label of one-hot rows their first arg-max).
  }];
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_AnyTensor:$labels,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$k);
  let results = (outs Graph_Scalar:$accuracy);
  let assemblyFormat = [{
    $predictions `,` $labels (`weights` $sample_weight^)? (`k` `=` $k^)?
    attr-dict
    `:` type($predictions) `,` type($labels) (`,` type($sample_weight)^)?
    `->` type($accuracy)
  }];
}

//===----------------------------------------------------------------------===//
// Training: gradients, variable updates
//
// Built by graph-build-training-step, never by the importer. Every gradient
// op takes what its reference implementation needs and nothing else, so a
// naive kernel can evaluate it from its operands and attributes alone.
//===----------------------------------------------------------------------===//

def Graph_Conv2DGradInputOp : Graph_Op<"conv2d_grad_input", [Pure]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    `dx` has the forward input's type (given, since strides lose it).
  }];
  let arguments = (ins Graph_FloatTensor:$output_grad, Graph_FloatTensor:$kernel,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $kernel `strides` `=` $strides `padding` `=` `` $padding
    `dilations` `=` $dilations (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_Conv2DGradKernelOp : Graph_Op<"conv2d_grad_kernel", [Pure]> {
  let summary = "gradient of conv2d with respect to its kernel";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$output_grad,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout);
  let results = (outs Graph_FloatTensor:$kernel_grad);
  let assemblyFormat = [{
    $input `,` $output_grad `strides` `=` $strides `padding` `=` `` $padding
    `dilations` `=` $dilations (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_MaxPool2DGradOp : Graph_Op<"max_pool2d_grad", [Pure]> {
  let summary = "routes each output gradient to its window's first maximum";
  let description = [{
    With `relu_grad` (set by graph-fuse), `input` is a relu's output and the
    op also applies that relu's gradient: the input gradient is zero where
    `input <= 0`, as a following `relu_grad(dx, input)` would make it. One
    pass over the pooled layer's activations instead of two.

    With a second result `input_grad_sum` (also set by graph-fuse), the op
    gives `input_grad` summed over every axis but the last, as a following
    `bias_add_grad(input_grad)` would: the bias gradient of the layer below,
    taken from the values as they are written instead of in a second pass
    over them.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$output,
                       Graph_FloatTensor:$output_grad, Graph_Pair:$pool_size,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       UnitAttr:$relu_grad);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Optional<Graph_FloatTensor>:$input_grad_sum);
  let assemblyFormat = [{
    $input `,` $output `,` $output_grad `pool_size` `=` $pool_size
    `strides` `=` $strides `padding` `=` `` $padding attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_AvgPool2DGradOp : Graph_Op<"avg_pool2d_grad", [Pure]> {
  let summary = "spreads each output gradient evenly over its window";
  let arguments = (ins Graph_FloatTensor:$output_grad, Graph_Pair:$pool_size,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `pool_size` `=` $pool_size `strides` `=` $strides
    `padding` `=` `` $padding attr-dict `:` type($output_grad) `->` type($input_grad)
  }];
  let hasVerifier = 1;
}

def Graph_GlobalAvgPool2DGradOp : Graph_Op<"global_avg_pool2d_grad", [Pure]> {
  let summary = "spreads [B, C] gradients evenly over H x W";
  let arguments = (ins Graph_FloatTensor:$output_grad);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($input_grad)";
  let hasVerifier = 1;
}

def Graph_DenseGradInputOp : Graph_Op<"dense_grad_input", [Pure, InferTypeOpAdaptor]> {
  let summary = "dy[..., N] * kernel[K, N]^T";
  let arguments = (ins Graph_FloatTensor:$output_grad, Graph_FloatTensor:$kernel);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad `,` $kernel attr-dict `:` functional-type(operands, results)";
}

def Graph_DenseGradKernelOp : Graph_Op<"dense_grad_kernel", [Pure, InferTypeOpAdaptor]> {
  let summary = "x[..., K]^T * dy[..., N], summed over every leading axis";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$output_grad);
  let results = (outs Graph_FloatTensor:$kernel_grad);
  let assemblyFormat = "$input `,` $output_grad attr-dict `:` functional-type(operands, results)";
}

def Graph_BiasAddGradOp : Graph_Op<"bias_add_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "sums the gradient over every axis but the last";
  let arguments = (ins Graph_FloatTensor:$output_grad);
  let results = (outs Graph_FloatTensor:$bias_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($bias_grad)";
}

class Graph_ActivationGradOp<string mnemonic, string what, string from,
                             dag attrs = (ins)>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what;
  let description = "Computed from the forward op's " # from # ".";
  let arguments = !con((ins Graph_FloatTensor:$output_grad,
                            Graph_FloatTensor:$saved), attrs);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad `,` $saved attr-dict `:` type($input_grad)";
}

def Graph_ReluGradOp : Graph_ActivationGradOp<"relu_grad", "dy * (y > 0)", "output y">;
def Graph_SigmoidGradOp : Graph_ActivationGradOp<"sigmoid_grad", "dy * y * (1 - y)", "output y">;
def Graph_TanhGradOp : Graph_ActivationGradOp<"tanh_grad", "dy * (1 - y^2)", "output y">;
def Graph_EluGradOp : Graph_ActivationGradOp<"elu_grad",
    "dy if y > 0 else dy * (y + alpha)", "output y",
    (ins DefaultValuedAttr<F64Attr, "1.0">:$alpha)>;
def Graph_LeakyReluGradOp : Graph_ActivationGradOp<"leaky_relu_grad",
    "dy if x > 0 else alpha * dy", "input x",
    (ins DefaultValuedAttr<F64Attr, "0.2">:$alpha)>;
def Graph_GeluGradOp : Graph_ActivationGradOp<"gelu_grad",
    "dy * d(gelu)/dx", "input x", (ins UnitAttr:$approximate)>;
def Graph_ClippedReluGradOp : Graph_ActivationGradOp<"clipped_relu_grad",
    "dy * (x < max_value) if x > threshold else dy * negative_slope",
    "input x",
    (ins OptionalAttr<F64Attr>:$max_value,
         DefaultValuedAttr<F64Attr, "0.0">:$negative_slope,
         DefaultValuedAttr<F64Attr, "0.0">:$threshold)>;
def Graph_SiluGradOp : Graph_ActivationGradOp<"silu_grad",
    "dy * s * (1 + x * (1 - s)), s = sigmoid(x)", "input x">;
def Graph_HardSigmoidGradOp : Graph_ActivationGradOp<"hard_sigmoid_grad",
    "dy / 6 if -3 < x < 3 else 0", "input x">;
def Graph_HardSiluGradOp : Graph_ActivationGradOp<"hard_silu_grad",
    "dy * (relu6(x + 3) + x * (-3 < x < 3)) / 6", "input x">;
def Graph_SoftmaxGradOp : Graph_ActivationGradOp<"softmax_grad",
    "y * (dy - sum(dy * y, axis))", "output y",
    (ins DefaultValuedAttr<I64Attr, "-1">:$axis)>;

def Graph_DropoutGradOp : Graph_UnaryOp<"dropout_grad",
    "applies the forward dropout's mask (regenerated from seed and step) and "
    "scale to the gradient",
    (ins F64Attr:$rate, I64Attr:$seed,
         OptionalAttr<DenseI64ArrayAttr>:$noise_shape)>;

def Graph_RandomImageTransformGradOp : Graph_Op<"random_image_transform_grad",
    [Pure]> {
  let summary = "the transpose of graph.random_image_transform's resampling "
                "(same attributes, same draws) applied to its output gradient";
  let arguments = !con((ins Graph_FloatTensor:$dy), Graph_ImageTransformAttrs);
  let results = (outs Graph_FloatTensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` type($dy) `->` type($dx)";
}

def Graph_RandomContrastGradOp : Graph_Op<"random_contrast_grad", [Pure,
    SameOperandsAndResultType]> {
  let summary = "f * g + (1 - f) * mean(g) over each image's pixels, g = dy "
                "where random_contrast's clip passed (same draws)";
  let arguments = (ins Graph_FloatTensor:$dy, Graph_FloatTensor:$input,
                       I64Attr:$seed, F64ArrayAttr:$contrast_range,
                       F64ArrayAttr:$value_range);
  let results = (outs Graph_FloatTensor:$dx);
  let assemblyFormat = "$dy `,` $input attr-dict `:` type($dy)";
}

def Graph_MaximumGradOp : Graph_Op<"maximum_grad", [Pure,
    SameOperandsAndResultType]> {
  let summary = "dy where inputs[index] is the first of the largest inputs";
  let description = [{
    The gradient of `graph.maximum` for its input `index`. As TensorFlow's
    pairwise maximum (`maximum(maximum(x0, x1), x2)`, whose gradient goes to
    the first operand on ties), a tie goes to the earliest input.
  }];
  let arguments = (ins Graph_FloatTensor:$output_grad,
                       Variadic<Graph_FloatTensor>:$inputs, I64Attr:$index);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $inputs `index` `=` $index attr-dict `:` type($input_grad)
  }];
  let hasVerifier = 1;
}

def Graph_SliceOp : Graph_Op<"slice", [Pure]> {
  let summary = "the part of a tensor at `offset` along `axis` (gradient of concatenate)";
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis, I64Attr:$offset);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `axis` `=` $axis `offset` `=` $offset attr-dict
    `:` type($input) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Graph_BatchNormTrainOp : Graph_Op<"batch_norm_train", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "batch normalisation with the batch's statistics";
  let description = [{
    Normalises with the batch mean and (biased) variance over every axis but
    the last, and returns the updated moving statistics
    (`moving * momentum + batch * (1 - momentum)`, with the biased batch
    variance, or the unbiased one under `unbiased_moving_variance`: see
    batch_norm) plus the batch mean and 1/sqrt(var + epsilon) that the
    gradient needs.

    With `row_mask` ([N], the step's metric_weight), only the rows whose
    mask is not 0 are the batch: a short batch's padding rows are left out
    of the statistics, as Keras computes them over the examples alone. The
    left-out rows' output is beta (0 without it), their normalised value 0:
    normalised with statistics they are not in, they could grow without
    bound through a stack of batch norms. The moving
    statistics take the batch's times w, the mean of `row_mask`: the
    metric weights sum to the global batch, so w is 1 on one device and,
    on each of R replicas, its share of the batch's examples times R; the
    replicas' mean of the new moving statistics is then the mean of their
    batch statistics weighted by their examples (one device's when one
    replica holds them all). A replica without examples has statistics 0.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Graph_FloatTensor:$moving_mean,
                       Graph_FloatTensor:$moving_variance,
                       Optional<Graph_FloatTensor>:$gamma,
                       Optional<Graph_FloatTensor>:$beta,
                       Optional<Graph_FloatTensor>:$row_mask,
                       F64Attr:$epsilon, F64Attr:$momentum,
                       UnitAttr:$unbiased_moving_variance);
  let results = (outs Graph_FloatTensor:$output,
                      Graph_FloatTensor:$batch_mean,
                      Graph_FloatTensor:$batch_inv_std,
                      Graph_FloatTensor:$new_moving_mean,
                      Graph_FloatTensor:$new_moving_variance);
  let assemblyFormat = [{
    $input `,` $moving_mean `,` $moving_variance
    (`gamma` $gamma^)? (`beta` $beta^)? (`row_mask` $row_mask^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BatchNormGradOp : Graph_Op<"batch_norm_grad", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "gradients of batch_norm_train: input, gamma, beta";
  let description = [{
    With xhat the normalised input and n the rows of each channel:
    `dx = gamma * inv_std / n * (n dy - sum dy - xhat sum(dy xhat))`,
    `gamma_grad = sum dy xhat`, `beta_grad = sum dy`. With `row_mask`
    (batch_norm_train's), the sums and n are over the rows whose mask is
    not 0, and the other rows' dx is 0: they were not in the statistics.
  }];
  let arguments = (ins Graph_FloatTensor:$output_grad, Graph_FloatTensor:$input,
                       Graph_FloatTensor:$batch_mean,
                       Graph_FloatTensor:$batch_inv_std,
                       Optional<Graph_FloatTensor>:$gamma,
                       Optional<Graph_FloatTensor>:$row_mask);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$gamma_grad,
                      Graph_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $batch_mean `,` $batch_inv_std
    (`gamma` $gamma^)? (`row_mask` $row_mask^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BatchNormInferenceGradOp
    : Graph_Op<"batch_norm_inference_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "input gradient of inference-mode batch_norm";
  let description = [{
    `dx = dy * gamma / sqrt(moving_variance + epsilon)` per channel of the
    last axis (gamma 1 when absent): batch_norm with its moving statistics,
    gamma and beta held constant, as Keras runs a BatchNormalization layer
    with trainable = False while the layers below it train. Nothing flows
    to the statistics, gamma or beta: they are frozen.
  }];
  let arguments = (ins Graph_FloatTensor:$output_grad,
                       Graph_FloatTensor:$moving_variance,
                       Optional<Graph_FloatTensor>:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$epsilon);
  let results = (outs Graph_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $moving_variance (`gamma` $gamma^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [Pure]> {
  let summary = "gradients of layer_norm: input, gamma, beta";
  let description = [{
    Recomputes each row's mean and 1/sqrt(var + epsilon) from the input.
    With xhat the normalised input and C the last axis:
    `dx = inv_std / C * (C g - sum g - xhat sum(g xhat))`, `g = dy * gamma`
    (sums over the row); `gamma_grad = sum dy * xhat` and
    `beta_grad = sum dy` over every axis but the last.
  }];
  let arguments = (ins Graph_FloatTensor:$output_grad, Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$epsilon);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$gamma_grad,
                      Graph_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $output_grad `,` $input (`gamma` $gamma^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class Graph_LossGradOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure]> {
  let summary = what;
  let description = [{
    The gradient of the batch-mean loss with respect to the predictions
    (`1 / batch` included), the start of backpropagation. With
    `sample_weight` [batch], the gradient of the weighted loss: row r's
    gradient times w[r] (the training step's weights: Keras'
    `sample_weight` and `class_weight`, 0 for the padding of an epoch's
    short last batch).
  }];
  let arguments = (ins Graph_FloatTensor:$predictions, Graph_AnyTensor:$labels,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       UnitAttr:$from_logits);
  let results = (outs Graph_FloatTensor:$predictions_grad);
  let assemblyFormat = [{
    $predictions `,` $labels (`weights` $sample_weight^)?
    (`from_logits` $from_logits^)? attr-dict
    `:` type($predictions) `,` type($labels) (`,` type($sample_weight)^)?
    `->` type($predictions_grad)
  }];
  let hasVerifier = 1;
}

def Graph_CategoricalCrossentropyGradOp
    : Graph_LossGradOp<"categorical_crossentropy_grad",
                       "gradient of categorical_crossentropy">;
def Graph_SparseCategoricalCrossentropyGradOp
    : Graph_LossGradOp<"sparse_categorical_crossentropy_grad",
                       "gradient of sparse_categorical_crossentropy">;

def Graph_PointwiseLossGradOp : Graph_Op<"pointwise_loss_grad", [Pure,
    AllTypesMatch<["predictions", "targets", "predictions_grad"]>]> {
  let summary = "gradient of graph.pointwise_loss";
  let description = [{
    The gradient of the batch-mean loss with respect to the predictions
    (the mean's division included), the start of backpropagation; with
    `sample_weight` [batch], of the weighted loss (row r's gradient times
    w[r]).
  }];
  let arguments = (ins Graph_LossKindAttr:$kind, Graph_FloatTensor:$predictions,
                       Graph_FloatTensor:$targets,
                       Optional<Graph_FloatTensor>:$sample_weight,
                       UnitAttr:$from_logits,
                       OptionalAttr<F64Attr>:$label_smoothing,
                       OptionalAttr<F64Attr>:$delta,
                       OptionalAttr<F64Attr>:$alpha,
                       OptionalAttr<F64Attr>:$gamma,
                       UnitAttr:$apply_class_balancing);
  let results = (outs Graph_FloatTensor:$predictions_grad);
  let assemblyFormat = [{
    `` $kind $predictions `,` $targets (`weights` $sample_weight^)?
    (`from_logits` $from_logits^)?
    (`label_smoothing` `=` $label_smoothing^)? (`delta` `=` $delta^)?
    (`alpha` `=` $alpha^)? (`gamma` `=` $gamma^)?
    (`apply_class_balancing` $apply_class_balancing^)?
    attr-dict `:` type($predictions) (`,` type($sample_weight)^)?
  }];
  let hasVerifier = 1;
}

def Graph_EmaUpdateOp : Graph_Op<"ema_update", [Pure,
    AllTypesMatch<["value", "average", "new_average", "new_value"]>]> {
  let summary = "Keras' use_ema: the moving average of a variable just "
                "updated, and the variable (the average every N-th step)";
  let description = [{
    With the step counter s (1 on the first step), Keras' iterations
    i = (s - 1) / `accumulation` (gradient_accumulation_steps: the updates
    applied before this step) and m = momentum, but 0 while i is 0:
    `new_average = m * average + (1 - m) * value`, every step; `new_value`
    is `new_average` when `overwrite_frequency` N > 0 and (i + 1) % N == 0,
    else `value` (base_optimizer.py, `_update_model_variables_moving_average`
    and `_overwrite_model_variables_with_average_value`;
    runtime/core/EmaSchedule.h).
  }];
  let arguments = (ins Graph_FloatTensor:$value, Graph_FloatTensor:$average,
                       F64Attr:$momentum,
                       DefaultValuedAttr<I64Attr, "0">:$overwrite_frequency,
                       DefaultValuedAttr<I64Attr, "1">:$accumulation);
  let results = (outs Graph_FloatTensor:$new_average,
                      Graph_FloatTensor:$new_value);
  let assemblyFormat = "$value `,` $average attr-dict `:` type($value)";
}

def Graph_OptimizerUpdateOp : Graph_Op<"optimizer_update", [Pure,
    AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "one optimizer step for one or many variables";
  let description = [{
    For each of N variables: the current value, its (all-reduced) gradient,
    and its slots; returns the new values and new slots, in the same order.
    With no slots (SGD without momentum) the result list ends after the
    new values. Slots per variable, in order: SGD: `momentum` (when momentum > 0);
    Adam: `m`, `v` (and `vhat` with amsgrad); RMSprop: `rms`, then
    `momentum` (when momentum > 0), then `mg` (when centered); Adagrad:
    `accumulator` (starting at initial_accumulator_value); Adamax: `m`,
    `u`; Nadam: `m`, `v`; then, with gradient_accumulation_steps,
    `grad_accum` (the sum of the gradients since the last update). Slots are
    grouped per variable: `[slots of var 0, slots of var 1, ...]`.
    The step count for Adam's bias correction is the runtime's global step
    (1 on the first update), not an operand: a whole-step CUDA graph replays
    the same arguments every step.

    With `clipnorm` or `global_clipnorm` set on the optimizer, `norms` has
    one scalar per variable: the L2 norm of that variable's gradient
    (clipnorm) or the global norm of all gradients (global_clipnorm), both
    `graph.global_norm`s of the all-reduced gradients; the update first
    scales the gradient as Keras does (`g * c / max(norm, c)`, or
    `g * (c * min(1/norm, 1/c) + (norm - norm))` for the global norm). With
    `clipvalue` the gradient is clipped to `[-c, c]`, and with
    `weight_decay` the variable first becomes `var - var * wd * lr`.

    Under dynamic loss scaling (Keras' LossScaleOptimizer) `loss_scale` is
    `(scale, norm, iterations)`, each one element: the scale this step's
    loss was multiplied by, the `graph.global_norm` of the (scaled,
    all-reduced) gradients, and the updates applied so far. When the norm
    is not finite the update is skipped (every result is its operand);
    otherwise each gradient (and each clipping norm) is first divided by
    the scale, and the step count of the bias corrections and of the
    learning-rate schedule is `iterations + 1` (Keras' inner optimizer
    counts only the updates it applied) in place of the global step. With
    `replicas` N (dist-replicate sets it) the divisor is `scale / N`: the
    replicas' gradients were scaled by it (graph.scale_by) and averaged.

    ```mlir
    %p, %m, %v = graph.optimizer_update #graph.adam<...>
        params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>)
        slots(%m0, %v0 : tensor<3xf32>, tensor<3xf32>)
        -> (tensor<3xf32>), (tensor<3xf32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins AnyAttrOf<[Graph_SGDAttr, Graph_AdamAttr,
                                  Graph_RMSpropAttr, Graph_AdagradAttr,
                                  Graph_AdamaxAttr, Graph_NadamAttr]>:$optimizer,
                       Variadic<Graph_FloatTensor>:$params,
                       Variadic<Graph_FloatTensor>:$grads,
                       Variadic<Graph_FloatTensor>:$slots,
                       Variadic<Graph_Scalar>:$norms,
                       Variadic<Graph_FloatTensor>:$loss_scale,
                       OptionalAttr<I64Attr>:$replicas);
  let results = (outs Variadic<Graph_FloatTensor>:$new_params,
                      Variadic<Graph_FloatTensor>:$new_slots);
  let assemblyFormat = [{
    $optimizer `params` `(` $params `:` type($params) `)`
    `grads` `(` $grads `:` type($grads) `)`
    `slots` `(` ($slots^ `:` type($slots))? `)`
    (`norms` `(` $norms^ `:` type($norms) `)`)?
    (`loss_scale` `(` $loss_scale^ `:` type($loss_scale) `)`)? attr-dict
    `->` `(` type($new_params) `)` (`,` `(` type($new_slots)^ `)`)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// How many slot variables `optimizer` keeps per trained variable.
    static unsigned slotsPerVariable(::mlir::Attribute optimizer);
    /// The slot names, in operand order (`m`, `v`, ...).
    static ::llvm::SmallVector<::llvm::StringRef> slotNames(::mlir::Attribute optimizer);
  }];
}

def Graph_GlobalNormOp : Graph_Op<"global_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "the L2 norm of all its operands taken as one vector";
  let description = [{
    `sqrt(sum over every operand and element of x^2)`, Keras'
    `global_norm`. The training step computes it over the gradients the
    optimizer applies (after the all-reduce) and returns it as
    `grad_norm`: one finite scalar per step tells the runtime that the loss
    and every gradient are finite, without reading a single tensor back.
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_Scalar:$norm);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($norm)
  }];
}

def Graph_ScaleByOp : Graph_Op<"scale_by", [Pure, InferTypeOpAdaptor]> {
  let summary = "x * s, for a tensor s of one element";
  let description = [{
    The loss gradient times the dynamic loss scale (Keras'
    LossScaleOptimizer.scale_loss, taken through the loss's gradient): the
    scale is a variable, read each step, so not an attribute.

    With `replicas` N (dist-replicate sets it) the product is divided by N:
    a replica's gradient is then its share of the global batch's, as each
    replica's under MirroredStrategy (whose loss is divided by the global
    batch), so float16 overflows where TensorFlow's does; the all-reduce's
    mean of them, times N, is TensorFlow's sum (see optimizer_update).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       OptionalAttr<I64Attr>:$replicas);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Graph_LossScaleUpdateOp : Graph_Op<"loss_scale_update", [Pure,
    InferTypeOpAdaptor]> {
  let summary = "Keras' dynamic loss scale after a step";
  let description = [{
    keras/src/optimizers/loss_scale_optimizer.py: with `norm` (the
    `graph.global_norm` of the step's scaled gradients) finite, the step
    counter counts up and, at `growth_steps`, restarts while the scale
    doubles; `iterations` (the updates applied) counts up. With it not
    finite (the update was skipped), the scale halves and the counter
    restarts. `grad_norm` is the norm divided by the scale: that of the
    gradients the optimizer applies (with `replicas` N, divided by scale /
    N, as optimizer_update divides). Every operand holds one element; the
    results have the operands' types (scale, counter, iterations, norm).
  }];
  let arguments = (ins Graph_FloatTensor:$scale, Graph_FloatTensor:$counter,
                       Graph_FloatTensor:$iterations, Graph_FloatTensor:$norm,
                       ConfinedAttr<I64Attr, [IntPositive]>:$growth_steps,
                       OptionalAttr<I64Attr>:$replicas);
  let results = (outs Graph_FloatTensor:$new_scale,
                      Graph_FloatTensor:$new_counter,
                      Graph_FloatTensor:$new_iterations,
                      Graph_FloatTensor:$grad_norm);
  let assemblyFormat = [{
    $scale `,` $counter `,` $iterations `,` $norm attr-dict `:`
    type($scale) `,` type($counter) `,` type($iterations) `,` type($norm)
  }];
}

def Graph_AssignVariableOp : Graph_Op<"assign_variable", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "writes a new value into a variable at the end of the step";
  let arguments = (ins FlatSymbolRefAttr:$variable, Graph_FloatTensor:$value);
  let assemblyFormat = "$variable `,` $value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Fused forms, built by graph-fuse for the kernels that implement them
//===----------------------------------------------------------------------===//

def Graph_EpilogueActivation : I32EnumAttr<"EpilogueActivation",
    "activation applied in a fused epilogue", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"sigmoid", 2>, I32EnumAttrCase<"tanh", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}
def Graph_EpilogueActivationAttr
    : EnumAttr<Graph_Dialect, Graph_EpilogueActivation, "epilogue">;

def Graph_FusedConv2DOp : Graph_Op<"fused_conv2d", [Pure]> {
  let summary = "conv2d + optional bias + activation in one kernel";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel,
                       Optional<Graph_FloatTensor>:$bias,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       Graph_EpilogueActivationAttr:$activation,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $kernel (`bias` $bias^)? `strides` `=` $strides
    `padding` `=` `` $padding `dilations` `=` $dilations
    (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)? `activation` `=` `` $activation attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_I32Tensor : Type<And<[RankedTensorOf<[I32]>.predicate,
                                Graph_StaticShapePred]>,
                           "statically shaped tensor of i32",
                           "::mlir::RankedTensorType">;

def Graph_FusedConv2DPoolOp : Graph_Op<"fused_conv2d_pool", [Pure]> {
  let summary = "fused_conv2d then a max pool, the convolution's output never stored";
  let description = [{
    `max_pool2d(fused_conv2d(input, kernel, bias))`, with the position of
    each output's first maximum in its window (row-major, from 0) as
    `argmax`: what the pool's gradient needs from the forward pass
    (`max_pool2d_argmax_grad`), in place of the convolution's output. Set
    by graph-fuse where nothing else reads that output, so a kernel may
    compute it a slice of the batch at a time and pool each slice while it
    is in cache: the layer's largest activation is then neither written
    nor read back, in the forward pass or the backward one.

    In bfloat16 or float16 the convolution's output is rounded to that type
    before it is pooled, as `fused_conv2d` would store it: the maximum and
    its position are those among the rounded values, whose ties go to the
    first as `max_pool2d_grad`'s do.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel,
                       Optional<Graph_FloatTensor>:$bias,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       Graph_EpilogueActivationAttr:$activation,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout,
                       Graph_Pair:$pool_size, Graph_Pair:$pool_strides,
                       Graph_PaddingAttr:$pool_padding);
  let results = (outs Graph_FloatTensor:$output, Graph_I32Tensor:$argmax);
  let assemblyFormat = [{
    $input `,` $kernel (`bias` $bias^)? `strides` `=` $strides
    `padding` `=` `` $padding `dilations` `=` $dilations
    (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)? `activation` `=` `` $activation
    `pool_size` `=` $pool_size `pool_strides` `=` $pool_strides
    `pool_padding` `=` `` $pool_padding attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_MaxPool2DArgmaxGradOp : Graph_Op<"max_pool2d_argmax_grad", [Pure]> {
  let summary = "routes each output gradient to its window's argmax";
  let description = [{
    The gradient of a max pool from the forward pass's `argmax`
    (`fused_conv2d_pool`) instead of its input: `input_grad` (the pool
    input's shape, which the pooled shape does not determine) is zero except
    where a window's argmax points, which gets that window's `output_grad`
    (accumulated where windows overlap). With `relu_grad`, only where the
    window's maximum, `output`, is > 0: the gradient of a relu that produced
    the pool's input, zero where that input is <= 0, is zero at the maximum
    exactly when the maximum is. With a second result, `input_grad` summed
    over every axis but the last, as for `max_pool2d_grad`.
  }];
  let arguments = (ins Graph_I32Tensor:$argmax, Graph_FloatTensor:$output,
                       Graph_FloatTensor:$output_grad, Graph_Pair:$pool_size,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       UnitAttr:$relu_grad);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Optional<Graph_FloatTensor>:$input_grad_sum);
  let assemblyFormat = [{
    $argmax `,` $output `,` $output_grad `pool_size` `=` $pool_size
    `strides` `=` $strides `padding` `=` `` $padding attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_FusedConv2DPoolGradKernelOp
    : Graph_Op<"fused_conv2d_pool_grad_kernel", [Pure]> {
  let summary = "a fused_conv2d_pool's kernel gradient from its pooled gradient";
  let description = [{
    `conv2d_grad_kernel(input, max_pool2d_argmax_grad(argmax, output,
    output_grad))`: the kernel gradient of the convolution of a
    `fused_conv2d_pool`, taken straight from the gradient of its pooled
    output. Each window's gradient goes to the one position its argmax
    names (with `relu_grad`, only where the window's maximum, `output`, is
    > 0), so a kernel can multiply it into the input patch under that
    position instead of writing the dense gradient of the convolution's
    output and reading it back: a quarter of the work for a 2x2 pool. With
    `bias_grad`, also the sum of that gradient over every axis but the last
    (`input_grad_sum`). Set by graph-fuse where the kernel gradient reads
    the dense gradient; where other ops read it too (the convolution's
    input gradient), with `writes_workspace`. In bfloat16 or float16 only for windows that do
    not overlap, where the dense gradient holds each pooled gradient as it
    is, so its rounding changes nothing; the sums are rounded once, at the
    end.

    `workspace` has the dense gradient's shape: a backend without a direct
    kernel computes the two ops above through it. With `writes_workspace` it holds
    that dense gradient on every backend, for the other ops that read it
    (graph-fuse sets it where the convolution's input gradient does: a
    direct kernel writes it as it goes, and still does a quarter of the
    dense gradient's work for the kernel gradient); without, its contents
    are unspecified and nothing reads it (the cpu kernel leaves it alone).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_I32Tensor:$argmax,
                       Graph_FloatTensor:$output,
                       Graph_FloatTensor:$output_grad,
                       Graph_Pair:$strides, Graph_PaddingAttr:$padding,
                       Graph_Pair:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Graph_FilterLayoutAttr,
                           "::mlir::graph::FilterLayout::hwio">:$filter_layout,
                       Graph_Pair:$pool_size, Graph_Pair:$pool_strides,
                       Graph_PaddingAttr:$pool_padding, UnitAttr:$relu_grad,
                       UnitAttr:$writes_workspace);
  let results = (outs Graph_FloatTensor:$kernel_grad,
                      Graph_FloatTensor:$workspace,
                      Optional<Graph_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $input `,` $argmax `,` $output `,` $output_grad `strides` `=` $strides
    `padding` `=` `` $padding `dilations` `=` $dilations
    (`groups` `=` $groups^)?
    (`filter_layout` `=` `` $filter_layout^)?
    `pool_size` `=` $pool_size `pool_strides` `=` $pool_strides
    `pool_padding` `=` `` $pool_padding attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_FusedDenseOp : Graph_Op<"fused_dense", [Pure]> {
  let summary = "dense + optional bias + activation in one kernel";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$kernel,
                       Optional<Graph_FloatTensor>:$bias,
                       Graph_EpilogueActivationAttr:$activation);
  let results = (outs Graph_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $kernel (`bias` $bias^)? `activation` `=` `` $activation attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyOp : Graph_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "softmax and cross-entropy in one kernel, forward and backward";
  let description = [{
    From logits [B, C] and one-hot [B, C] (float) or class-index [B]
    (integer) labels: the probabilities, the batch-mean loss, and the
    gradient of that loss with respect to the logits ((p - y) / B). What
    Keras computes for a softmax output trained with cross-entropy. With
    `sample_weight` [B], row i's loss and gradient are scaled by w_i (the
    losses' weighted mean).
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_AnyTensor:$labels,
                       Optional<Graph_FloatTensor>:$sample_weight);
  let results = (outs Graph_FloatTensor:$probabilities, Graph_Scalar:$loss,
                      Graph_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels (`weights` $sample_weight^)? attr-dict
    `:` type($logits) `,` type($labels) (`,` type($sample_weight)^)?
    `->` type($probabilities) `,` type($loss) `,` type($logits_grad)
  }];
  let hasVerifier = 1;
}

def Graph_ElementwiseOp : Graph_Op<"elementwise", [Pure,
    IsolatedFromAbove, SingleBlock]> {
  let summary = "a chain of elementwise ops fused into one kernel";
  let description = [{
    The body maps scalar-shaped tensors (`tensor<f32>`) one element at a
    time: block argument i is operand i's element, `graph.yield` gives the
    result's. All operands have the result's shape.
  }];
  let arguments = (ins Variadic<Graph_FloatTensor>:$inputs);
  let results = (outs Graph_FloatTensor:$output);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
}

def Graph_YieldOp : Graph_Op<"yield", [Pure, Terminator, HasParent<"ElementwiseOp">]> {
  let summary = "the element an elementwise body produces";
  let arguments = (ins Graph_Scalar:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // GRAPH_OPS_TD
