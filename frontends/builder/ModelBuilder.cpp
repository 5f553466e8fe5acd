//===- ModelBuilder.cpp - Keras-style C++ model builder -------------------===//

#include "frontends/builder/ModelBuilder.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::graph;

namespace graph::builder {

llvm::ArrayRef<int64_t> Tensor::shape() const {
  return cast<RankedTensorType>(value.getType()).getShape();
}

std::optional<Activation> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Case("linear", Activation::linear)
      .Case("relu", Activation::relu)
      .Case("sigmoid", Activation::sigmoid)
      .Case("tanh", Activation::tanh)
      .Case("softmax", Activation::softmax)
      .Case("elu", Activation::elu)
      .Case("leaky_relu", Activation::leaky_relu)
      .Case("gelu", Activation::gelu)
      .Case("relu6", Activation::relu6)
      .Cases({"silu", "swish"}, Activation::silu)
      .Case("hard_sigmoid", Activation::hard_sigmoid)
      .Cases({"hard_silu", "hard_swish"}, Activation::hard_silu)
      .Default(std::nullopt);
}

llvm::StringRef stringifyActivation(Activation activation) {
  switch (activation) {
  case Activation::linear:
    return "linear";
  case Activation::relu:
    return "relu";
  case Activation::sigmoid:
    return "sigmoid";
  case Activation::tanh:
    return "tanh";
  case Activation::softmax:
    return "softmax";
  case Activation::elu:
    return "elu";
  case Activation::leaky_relu:
    return "leaky_relu";
  case Activation::gelu:
    return "gelu";
  case Activation::relu6:
    return "relu6";
  case Activation::silu:
    return "silu";
  case Activation::hard_sigmoid:
    return "hard_sigmoid";
  case Activation::hard_silu:
    return "hard_silu";
  }
  llvm_unreachable("unknown activation");
}

/// Whether a float32 tensor of `shape` has a byte size that fits in int64_t.
/// Every tensor the builder makes is checked, so that later products of its
/// dimensions (element counts, byte sizes, offsets) cannot wrap: a batch of
/// 2^63 - 1 reached graphc's memory planner as negative offsets.
static bool sizeFits(llvm::ArrayRef<int64_t> shape) {
  std::optional<int64_t> bytes = 4;
  for (int64_t d : shape)
    if (!(bytes = llvm::checkedMul(*bytes, d)))
      return false;
  return true;
}

/// "[8, 28, 28, 1]".
static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

static std::string tooLarge(llvm::StringRef what,
                            llvm::ArrayRef<int64_t> shape) {
  return (what + " of shape " + shapeText(shape) +
          " is too large: its size in bytes does not fit in 64 bits")
      .str();
}

llvm::StringRef policyName(DTypePolicy policy) {
  switch (policy) {
  case DTypePolicy::float32:
    return "float32";
  case DTypePolicy::mixed_bfloat16:
    return "mixed_bfloat16";
  case DTypePolicy::mixed_float16:
    return "mixed_float16";
  }
  llvm_unreachable("a DTypePolicy");
}

Type ModelBuilder::computeType(DTypePolicy policy) {
  return *GraphDialect::policyComputeType(context, policyName(policy));
}

/// What a layer object knows once constructed: its Keras identity, and the
/// variables it created on its first call.
struct ModelBuilder::LayerContext {
  std::string name;
  std::string className;
  Location loc;
  bool trainable;
  DTypePolicy policy;
  std::map<std::string, VariableOp> variables;
};

ModelBuilder::ModelBuilder(MLIRContext *context, llvm::StringRef modelName,
                           int64_t batchSize, std::optional<Location> loc)
    : context(context), builder(context), batchSize(batchSize),
      baseLoc(loc ? *loc : UnknownLoc::get(context)) {
  context->getOrLoadDialect<GraphDialect>();
  module = ModuleOp::create(baseLoc);
  builder.setInsertionPointToEnd(module->getBody());
  model = ModelOp::create(builder, baseLoc, modelName);
  model.getBody().emplaceBlock();
  builder.setInsertionPointToEnd(&model.getBlock());
  if (batchSize <= 0) {
    mlir::emitError(baseLoc)
        << "batch size must be positive, got " << batchSize;
    failed = true;
  }
}

ModelBuilder::~ModelBuilder() = default;

void ModelBuilder::setBatchSize(int64_t size) {
  assert(model.getInputOps().empty() && "the batch changes after an Input");
  batchSize = size;
  if (batchSize <= 0) {
    mlir::emitError(baseLoc)
        << "batch size must be positive, got " << batchSize;
    failed = true;
  }
}

std::string ModelBuilder::uniqueName(llvm::StringRef requested,
                                     llvm::StringRef base) {
  if (!requested.empty()) {
    if (!takenNames.insert(requested.str()).second) {
      // Keras refuses two layers of one name: their weights would collide.
      mlir::emitError(baseLoc) << "duplicate layer name '" << requested << "'";
      failed = true;
    }
    return requested.str();
  }
  // Keras' default names: conv2d, conv2d_1, conv2d_2, ... skipping names a
  // user already took.
  int &suffix = nextSuffix[base.str()];
  while (true) {
    std::string name =
        suffix == 0 ? base.str() : base.str() + "_" + std::to_string(suffix);
    ++suffix;
    if (takenNames.insert(name).second)
      return name;
  }
}

Location ModelBuilder::layerLoc(const LayerOptions &options,
                                llvm::StringRef name) {
  return NameLoc::get(StringAttr::get(context, name),
                      options.loc ? *options.loc : baseLoc);
}

void ModelBuilder::emitLayerError(std::optional<Location> loc,
                                  llvm::StringRef name,
                                  llvm::StringRef className,
                                  const llvm::Twine &message) {
  mlir::emitError(loc ? *loc : baseLoc)
      << "layer '" << name << "' (" << className << "): " << message.str();
  failed = true;
}

namespace {
/// Builds ops of one layer: variables, and ops whose result types are
/// inferred, with inference errors reworded to name the layer.
class LayerEmitter {
public:
  LayerEmitter(ModelBuilder &model, OpBuilder &builder, ModuleOp module,
               ModelOp modelOp, ModelBuilder::LayerContext &layer,
               std::function<void(const llvm::Twine &)> error)
      : model(model), builder(builder), module(module), modelOp(modelOp),
        layer(layer), error(std::move(error)) {}

  /// Reads the layer's variable `weight`, creating it on first use.
  /// A VarianceScaling as the kind it draws from at this shape, with Keras'
  /// fans (the receptive field times the input and output channels).
  static Initializer resolveVarianceScaling(const Initializer &init,
                                            llvm::ArrayRef<int64_t> shape) {
    if (!init.variance_scaling)
      return init;
    using VS = Initializer::VarianceScaling;
    const VS &vs = *init.variance_scaling;
    double fanIn = 1, fanOut = 1;
    if (shape.size() == 1) {
      fanIn = fanOut = static_cast<double>(shape[0]);
    } else if (shape.size() >= 2) {
      double receptive = 1;
      for (size_t i = 0; i + 2 < shape.size(); ++i)
        receptive *= static_cast<double>(shape[i]);
      fanIn = static_cast<double>(shape[shape.size() - 2]) * receptive;
      fanOut = static_cast<double>(shape.back()) * receptive;
    }
    double fan = vs.mode == VS::Mode::fan_in    ? fanIn
                 : vs.mode == VS::Mode::fan_out ? fanOut
                                                : (fanIn + fanOut) / 2.0;
    double variance = vs.scale / std::max(1.0, fan);
    Initializer out = init;
    out.variance_scaling.reset();
    out.mean = 0.0;
    switch (vs.distribution) {
    case VS::Distribution::uniform:
      out.kind = InitKind::random_uniform;
      out.maxval = std::sqrt(3.0 * variance);
      out.minval = -out.maxval;
      break;
    case VS::Distribution::truncated_normal:
      // Keras: the stddev of a normal truncated at 2 stddevs, corrected.
      out.kind = InitKind::truncated_normal;
      out.stddev = std::sqrt(variance) / 0.87962566103423978;
      break;
    case VS::Distribution::untruncated_normal:
      out.kind = InitKind::random_normal;
      out.stddev = std::sqrt(variance);
      break;
    }
    return out;
  }

  /// A normalisation's optional `gamma` (with `scale`) and `beta` (with
  /// `center`) of `channels`; false (the error reported) when one cannot be
  /// made.
  template <typename Options>
  bool scaleAndCenter(const Options &o, int64_t channels, Value &gamma,
                      Value &beta) {
    if (o.scale && !(gamma = variable("gamma", {channels}, o.gamma_initializer,
                                      layer.trainable)))
      return false;
    return !o.center || (beta = variable("beta", {channels}, o.beta_initializer,
                                         layer.trainable));
  }

  Value variable(llvm::StringRef weight, llvm::ArrayRef<int64_t> shape,
                 const Initializer &initIn, bool trainable) {
    MLIRContext *ctx = builder.getContext();
    if (!sizeFits(shape)) {
      error(tooLarge(weight, shape));
      return {};
    }
    auto type = RankedTensorType::get(shape, Float32Type::get(ctx));
    VariableOp &var = layer.variables[weight.str()];
    if (!var) {
      std::string message;
      InitializerAttr attr;
      Initializer init = resolveVarianceScaling(initIn, shape);
      {
        ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &diag) {
          if (message.empty())
            message = diag.str();
          return success();
        });
        attr = InitializerAttr::getChecked(
            [&] { return mlir::emitError(layer.loc); }, ctx, init.kind,
            llvm::APFloat(init.mean), llvm::APFloat(init.stddev),
            llvm::APFloat(init.minval), llvm::APFloat(init.maxval),
            llvm::APFloat(init.value), init.seed);
      }
      if (!attr) {
        error("initializer of '" + weight + "': " + message);
        return {};
      }
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(modelOp);
      var = VariableOp::create(builder, layer.loc,
                               layer.name + "/" + weight.str(), type, attr,
                               trainable, /*logical_shape=*/nullptr,
                               /*logical_permutation=*/nullptr);
    }
    return ReadVariableOp::create(builder, layer.loc, type, var.getSymName())
        .getValue();
  }

  /// Creates `OpT` with a placeholder result type, infers the real one, and
  /// reports an inference failure as an error of this layer.
  template <typename OpT, typename... Args> Value inferred(Args &&...args) {
    auto op = OpT::create(builder, layer.loc, builder.getNoneType(),
                          std::forward<Args>(args)...);
    SmallVector<Type> types;
    std::string message;
    LogicalResult inferred = failure();
    {
      ScopedDiagnosticHandler capture(builder.getContext(),
                                      [&](Diagnostic &diag) {
                                        if (message.empty())
                                          message = diag.str();
                                        return success();
                                      });
      inferred = cast<InferTypeOpInterface>(op.getOperation())
                     .inferReturnTypes(
                         builder.getContext(), op.getLoc(), op->getOperands(),
                         op->getRawDictionaryAttrs(),
                         op->getPropertiesStorage(), op->getRegions(), types);
    }
    if (failed(inferred)) {
      op->erase();
      error(message);
      return {};
    }
    if (auto tensor = dyn_cast<RankedTensorType>(types.front());
        tensor && !sizeFits(tensor.getShape())) {
      op->erase();
      error(tooLarge("output", tensor.getShape()));
      return {};
    }
    op->getResult(0).setType(types.front());
    return op->getResult(0);
  }

  /// Applies a Keras activation to `x`.
  Value activation(Value x, Activation kind, std::optional<double> alpha = {},
                   bool approximate = false, int64_t axis = -1) {
    Location loc = layer.loc;
    Type type = x.getType();
    switch (kind) {
    case Activation::linear:
      return x;
    case Activation::relu:
      return ReluOp::create(builder, loc, type, x);
    case Activation::sigmoid:
      return SigmoidOp::create(builder, loc, type, x);
    case Activation::tanh:
      return TanhOp::create(builder, loc, type, x);
    case Activation::elu:
      return EluOp::create(builder, loc, type, x,
                           builder.getF64FloatAttr(alpha.value_or(1.0)));
    case Activation::leaky_relu:
      // Keras 3's leaky_relu activation defaults to a slope of 0.2.
      return LeakyReluOp::create(builder, loc, type, x,
                                 builder.getF64FloatAttr(alpha.value_or(0.2)));
    case Activation::gelu:
      return GeluOp::create(builder, loc, type, x, approximate);
    case Activation::relu6:
      return ClippedReluOp::create(
          builder, loc, type, x, builder.getF64FloatAttr(6.0),
          builder.getF64FloatAttr(0.0), builder.getF64FloatAttr(0.0));
    case Activation::silu:
      return SiluOp::create(builder, loc, type, x);
    case Activation::hard_sigmoid:
      return HardSigmoidOp::create(builder, loc, type, x);
    case Activation::hard_silu:
      return HardSiluOp::create(builder, loc, type, x);
    case Activation::softmax: {
      int64_t rank = cast<RankedTensorType>(type).getRank();
      if (axis < -rank || axis >= rank) {
        error("softmax axis " + llvm::Twine(axis) +
              " is out of range for rank " + llvm::Twine(rank));
        return {};
      }
      // Keras allows it; here a step's rows are not all examples (an
      // epoch's short batch is padded) and replicas split the batch.
      if (axis == 0 || axis == -rank) {
        error("softmax over the batch axis (axis " + llvm::Twine(axis) +
              ") is not supported: a step's batch is split across "
              "replicas and padded at an epoch's end");
        return {};
      }
      return SoftmaxOp::create(builder, loc, type, x,
                               builder.getI64IntegerAttr(axis));
    }
    }
    llvm_unreachable("unknown activation");
  }

  ModelBuilder &model;
  OpBuilder &builder;
  ModuleOp module;
  ModelOp modelOp;
  ModelBuilder::LayerContext &layer;
  std::function<void(const llvm::Twine &)> error;
};

/// A stable 63-bit seed from a layer name (FNV-1a), so an unseeded dropout
/// draws the same mask stream on every run and replica count.
int64_t seedFromName(llvm::StringRef name) {
  uint64_t hash = 1469598103934665603ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return static_cast<int64_t>(hash >> 1);
}
} // namespace

Layer ModelBuilder::makeLayer(
    llvm::StringRef className, llvm::StringRef defaultBase,
    const LayerOptions &options, size_t minInputs, size_t maxInputs,
    std::function<Tensor(LayerContext &, llvm::ArrayRef<Tensor>)> body) {
  std::string name = uniqueName(options.name, defaultBase);
  auto layer =
      std::make_shared<LayerContext>(LayerContext{name,
                                                  className.str(),
                                                  layerLoc(options, name),
                                                  options.trainable,
                                                  options.dtype_policy,
                                                  {}});
  return Layer([this, layer, minInputs, maxInputs,
                body = std::move(body)](llvm::ArrayRef<Tensor> inputs) {
    // After an error, stay quiet: the first message is the one that matters.
    if (llvm::any_of(inputs, [](Tensor t) { return !t; }))
      return Tensor();
    if (inputs.size() < minInputs || inputs.size() > maxInputs) {
      emitLayerError(layer->loc, layer->name, layer->className,
                     "expects " +
                         (minInputs == maxInputs
                              ? llvm::Twine(minInputs)
                              : "at least " + llvm::Twine(minInputs)) +
                         " input(s), got " + llvm::Twine(inputs.size()));
      return Tensor();
    }
    Block &block = model.getBlock();
    Operation *last = block.empty() ? nullptr : &block.back();
    Tensor result = body(*layer, inputs);
    if (Type compute = computeType(layer->policy))
      for (Operation &op : llvm::make_range(
               last ? std::next(last->getIterator()) : block.begin(),
               block.end()))
        op.setAttr(GraphDialect::getComputeTypeAttrName(),
                   TypeAttr::get(compute));
    return result;
  });
}

#define LAYER_EMITTER(layer)                                                   \
  LayerEmitter emit(*this, builder, *module, model, layer,                     \
                    [this, &layer](const llvm::Twine &message) {               \
                      emitLayerError(layer.loc, layer.name, layer.className,   \
                                     message);                                 \
                    })

Tensor ModelBuilder::Input(llvm::ArrayRef<int64_t> shape,
                           LayerOptions options) {
  std::string name = uniqueName(options.name, "input_layer");
  Location loc = layerLoc(options, name);
  if (llvm::any_of(shape, [](int64_t d) { return d <= 0; })) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(shape, os);
    emitLayerError(loc, name, "InputLayer",
                   "input shape (" + text +
                       ") must have known, positive dimensions");
    return Tensor();
  }
  SmallVector<int64_t> full{batchSize};
  full.append(shape.begin(), shape.end());
  if (!sizeFits(full)) {
    emitLayerError(loc, name, "InputLayer",
                   tooLarge("input", full) + " (batch size " +
                       llvm::Twine(batchSize) + ")");
    return Tensor();
  }
  auto type = RankedTensorType::get(full, builder.getF32Type());
  return Tensor(InputOp::create(builder, loc, type, name).getOutput());
}

/// Expects `t` to have `rank` dimensions; reports it for the layer otherwise.
static bool expectRank(Tensor t, int64_t rank, llvm::StringRef layout,
                       const std::function<void(const llvm::Twine &)> &error) {
  if (static_cast<int64_t>(t.shape().size()) == rank)
    return true;
  error("expects input of rank " + llvm::Twine(rank) + " (" + layout +
        "), got rank " + llvm::Twine(t.shape().size()));
  return false;
}

Layer ModelBuilder::Conv2D(Conv2DOptions o) {
  return makeLayer(
      "Conv2D", "conv2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (o.filters <= 0)
          return emit.error("filters must be positive, got " +
                            llvm::Twine(o.filters)),
                 Tensor();
        if (o.kernel_size[0] <= 0 || o.kernel_size[1] <= 0)
          return emit.error("kernel_size must be positive"), Tensor();
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        int64_t channels = in[0].shape()[3];
        if (o.groups < 1)
          return emit.error("groups must be positive, got " +
                            llvm::Twine(o.groups)),
                 Tensor();
        if (channels % o.groups != 0 || o.filters % o.groups != 0)
          return emit.error("groups (" + llvm::Twine(o.groups) +
                            ") must divide the input channels (" +
                            llvm::Twine(channels) + ") and filters (" +
                            llvm::Twine(o.filters) + ")"),
                 Tensor();
        Value kernel = emit.variable("kernel",
                                     {o.kernel_size[0], o.kernel_size[1],
                                      channels / o.groups, o.filters},
                                     o.kernel_initializer, layer.trainable);
        if (!kernel)
          return Tensor();
        Value y = emit.inferred<Conv2DOp>(in[0].getValue(), kernel, o.strides,
                                          o.padding, o.dilation_rate, o.groups);
        if (y && o.use_bias) {
          Value bias = emit.variable("bias", {o.filters}, o.bias_initializer,
                                     layer.trainable);
          y = bias ? emit.inferred<BiasAddOp>(y, bias) : Value();
        }
        return Tensor(y ? emit.activation(y, o.activation) : Value());
      });
}

Layer ModelBuilder::Conv2DTranspose(Conv2DTransposeOptions o) {
  return makeLayer(
      "Conv2DTranspose", "conv2d_transpose", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (o.filters <= 0)
          return emit.error("filters must be positive, got " +
                            llvm::Twine(o.filters)),
                 Tensor();
        if (o.kernel_size[0] <= 0 || o.kernel_size[1] <= 0 ||
            o.strides[0] <= 0 || o.strides[1] <= 0)
          return emit.error("kernel_size and strides must be positive"),
                 Tensor();
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        std::vector<int64_t> shape = in[0].shape();
        // Keras' deconv_output_length without output_padding.
        for (int axis : {0, 1}) {
          int64_t size = shape[1 + axis], k = o.kernel_size[axis],
                  s = o.strides[axis];
          shape[1 + axis] = o.padding == Padding::same
                                ? size * s
                                : size * s + std::max<int64_t>(k - s, 0);
        }
        int64_t channels = shape[3];
        shape[3] = o.filters;
        Value kernel = emit.variable(
            "kernel", {o.kernel_size[0], o.kernel_size[1], o.filters, channels},
            o.kernel_initializer, layer.trainable);
        if (!kernel)
          return Tensor();
        Value x = in[0].getValue();
        auto type = RankedTensorType::get(
            shape, cast<RankedTensorType>(x.getType()).getElementType());
        Value y = Conv2DGradInputOp::create(
            builder, layer.loc, type, x, kernel, o.strides, o.padding,
            std::array<int64_t, 2>{1, 1}, /*groups=*/1);
        if (o.use_bias) {
          Value bias = emit.variable("bias", {o.filters}, o.bias_initializer,
                                     layer.trainable);
          y = bias ? emit.inferred<BiasAddOp>(y, bias) : Value();
        }
        return Tensor(y ? emit.activation(y, o.activation) : Value());
      });
}

/// A depthwise conv2d of `x` by a new variable `weight` in Keras' layout
/// [kh, kw, C, multiplier], which graph.conv2d with groups = C takes as it
/// is; a null Value after an error.
static Value depthwise(LayerEmitter &emit, bool trainable, Value x,
                       llvm::StringRef weight,
                       std::array<int64_t, 2> kernelSize,
                       std::array<int64_t, 2> strides, Padding padding,
                       std::array<int64_t, 2> dilations, int64_t multiplier,
                       const Initializer &init) {
  int64_t channels = cast<RankedTensorType>(x.getType()).getDimSize(3);
  Value kernel = emit.variable(
      weight, {kernelSize[0], kernelSize[1], channels, multiplier}, init,
      trainable);
  if (!kernel)
    return {};
  return emit.inferred<Conv2DOp>(x, kernel, strides, padding, dilations,
                                 channels);
}

Layer ModelBuilder::DepthwiseConv2D(DepthwiseConv2DOptions o) {
  return makeLayer(
      "DepthwiseConv2D", "depthwise_conv2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (o.depth_multiplier <= 0)
          return emit.error("depth_multiplier must be positive, got " +
                            llvm::Twine(o.depth_multiplier)),
                 Tensor();
        if (o.kernel_size[0] <= 0 || o.kernel_size[1] <= 0)
          return emit.error("kernel_size must be positive"), Tensor();
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        int64_t channels = in[0].shape()[3];
        Value y =
            depthwise(emit, layer.trainable, in[0].getValue(), "kernel",
                      o.kernel_size, o.strides, o.padding, o.dilation_rate,
                      o.depth_multiplier, o.depthwise_initializer);
        if (y && o.use_bias) {
          Value bias = emit.variable("bias", {channels * o.depth_multiplier},
                                     o.bias_initializer, layer.trainable);
          y = bias ? emit.inferred<BiasAddOp>(y, bias) : Value();
        }
        return Tensor(y ? emit.activation(y, o.activation) : Value());
      });
}

Layer ModelBuilder::SeparableConv2D(SeparableConv2DOptions o) {
  return makeLayer(
      "SeparableConv2D", "separable_conv2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (o.filters <= 0)
          return emit.error("filters must be positive, got " +
                            llvm::Twine(o.filters)),
                 Tensor();
        if (o.depth_multiplier <= 0)
          return emit.error("depth_multiplier must be positive, got " +
                            llvm::Twine(o.depth_multiplier)),
                 Tensor();
        if (o.kernel_size[0] <= 0 || o.kernel_size[1] <= 0)
          return emit.error("kernel_size must be positive"), Tensor();
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        int64_t channels = in[0].shape()[3];
        // Keras' variable order: depthwise_kernel, pointwise_kernel, bias.
        Value y = depthwise(emit, layer.trainable, in[0].getValue(),
                            "depthwise_kernel", o.kernel_size, o.strides,
                            o.padding, o.dilation_rate, o.depth_multiplier,
                            o.depthwise_initializer);
        if (!y)
          return Tensor();
        Value pointwise =
            emit.variable("pointwise_kernel",
                          {1, 1, channels * o.depth_multiplier, o.filters},
                          o.pointwise_initializer, layer.trainable);
        if (!pointwise)
          return Tensor();
        y = emit.inferred<Conv2DOp>(y, pointwise, std::array<int64_t, 2>{1, 1},
                                    Padding::valid,
                                    std::array<int64_t, 2>{1, 1}, int64_t{1});
        if (y && o.use_bias) {
          Value bias = emit.variable("bias", {o.filters}, o.bias_initializer,
                                     layer.trainable);
          y = bias ? emit.inferred<BiasAddOp>(y, bias) : Value();
        }
        return Tensor(y ? emit.activation(y, o.activation) : Value());
      });
}

Layer ModelBuilder::Dense(DenseOptions o) {
  return makeLayer(
      "Dense", "dense", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (o.units <= 0)
          return emit.error("units must be positive, got " +
                            llvm::Twine(o.units)),
                 Tensor();
        if (in[0].shape().size() < 2)
          return emit.error("expects input of rank >= 2 ([batch, ..., "
                            "features]), got rank " +
                            llvm::Twine(in[0].shape().size())),
                 Tensor();
        Value kernel = emit.variable("kernel", {in[0].shape().back(), o.units},
                                     o.kernel_initializer, layer.trainable);
        if (!kernel)
          return Tensor();
        Value y = emit.inferred<DenseOp>(in[0].getValue(), kernel);
        if (y && o.use_bias) {
          Value bias = emit.variable("bias", {o.units}, o.bias_initializer,
                                     layer.trainable);
          y = bias ? emit.inferred<BiasAddOp>(y, bias) : Value();
        }
        return Tensor(y ? emit.activation(y, o.activation) : Value());
      });
}

Layer ModelBuilder::MaxPooling2D(Pool2DOptions o) {
  return makeLayer("MaxPooling2D", "max_pooling2d", o, 1, 1,
                   [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) {
                     LAYER_EMITTER(layer);
                     if (!expectRank(in[0], 4, "NHWC", emit.error))
                       return Tensor();
                     return Tensor(emit.inferred<MaxPool2DOp>(
                         in[0].getValue(), o.pool_size,
                         o.strides.value_or(o.pool_size), o.padding));
                   });
}

Layer ModelBuilder::AveragePooling2D(Pool2DOptions o) {
  return makeLayer("AveragePooling2D", "average_pooling2d", o, 1, 1,
                   [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) {
                     LAYER_EMITTER(layer);
                     if (!expectRank(in[0], 4, "NHWC", emit.error))
                       return Tensor();
                     return Tensor(emit.inferred<AvgPool2DOp>(
                         in[0].getValue(), o.pool_size,
                         o.strides.value_or(o.pool_size), o.padding));
                   });
}

Layer ModelBuilder::GlobalAveragePooling2D(GlobalPool2DOptions o) {
  return makeLayer(
      "GlobalAveragePooling2D", "global_average_pooling2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        Value y = emit.inferred<GlobalAvgPool2DOp>(in[0].getValue());
        if (!y || !o.keepdims)
          return Tensor(y);
        // keepdims: [N, 1, 1, C], as MobileNet's classifier and the
        // squeeze-and-excite blocks take it.
        auto type = RankedTensorType::get(
            {in[0].shape()[0], 1, 1, in[0].shape()[3]}, builder.getF32Type());
        return Tensor(ReshapeOp::create(builder, layer.loc, type, y));
      });
}

Layer ModelBuilder::GlobalMaxPooling2D(GlobalPool2DOptions o) {
  return makeLayer(
      "GlobalMaxPooling2D", "global_max_pooling2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        std::array<int64_t, 2> window = {in[0].shape()[1], in[0].shape()[2]};
        Value y = emit.inferred<MaxPool2DOp>(in[0].getValue(), window, window,
                                             Padding::valid);
        if (!y || o.keepdims)
          return Tensor(y);
        auto type = RankedTensorType::get({in[0].shape()[0], in[0].shape()[3]},
                                          builder.getF32Type());
        return Tensor(ReshapeOp::create(builder, layer.loc, type, y));
      });
}

Layer ModelBuilder::UpSampling2D(UpSampling2DOptions o) {
  return makeLayer(
      "UpSampling2D", "up_sampling2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        if (o.size[0] <= 0 || o.size[1] <= 0 || o.size[0] > (1 << 16) ||
            o.size[1] > (1 << 16))
          return emit.error("size must be in [1, 65536], got (" +
                            llvm::Twine(o.size[0]) + ", " +
                            llvm::Twine(o.size[1]) + ")"),
                 Tensor();
        llvm::ArrayRef<int64_t> s = in[0].shape();
        SmallVector<int64_t> shape{s[0], s[1] * o.size[0], s[2] * o.size[1],
                                   s[3]};
        if (!sizeFits(shape))
          return emit.error(tooLarge("output", shape)), Tensor();
        auto type = RankedTensorType::get(shape, builder.getF32Type());
        // avg_pool2d_grad spreads each value over its window divided by the
        // window's size; the scale undoes the division.
        Value spread =
            AvgPool2DGradOp::create(builder, layer.loc, type, in[0].getValue(),
                                    o.size, o.size, Padding::valid);
        return Tensor(ScaleShiftOp::create(
            builder, layer.loc, type, spread,
            builder.getF64FloatAttr(static_cast<double>(o.size[0] * o.size[1])),
            builder.getF64FloatAttr(0.0)));
      });
}

Layer ModelBuilder::Permute(PermuteOptions o) {
  return makeLayer(
      "Permute", "permute", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        int64_t rank = static_cast<int64_t>(in[0].shape().size());
        SmallVector<int64_t> permutation{0};
        SmallVector<bool> seen(rank, false);
        bool valid = static_cast<int64_t>(o.dims.size()) == rank - 1;
        for (int64_t d : o.dims) {
          valid = valid && d >= 1 && d < rank && !seen[d];
          if (!valid)
            break;
          seen[d] = true;
          permutation.push_back(d);
        }
        if (!valid)
          return emit.error("dims " + shapeText(o.dims) +
                            " is not a permutation of 1.." +
                            llvm::Twine(rank - 1) + " for an input of rank " +
                            llvm::Twine(rank)),
                 Tensor();
        return Tensor(emit.inferred<TransposeOp>(
            in[0].getValue(), ArrayRef<int64_t>(permutation)));
      });
}

Layer ModelBuilder::ZeroPadding2D(Padding2DOptions o) {
  return makeLayer(
      "ZeroPadding2D", "zero_padding2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        if (o.top < 0 || o.bottom < 0 || o.left < 0 || o.right < 0)
          return emit.error("padding must not be negative, got ((" +
                            llvm::Twine(o.top) + ", " + llvm::Twine(o.bottom) +
                            "), (" + llvm::Twine(o.left) + ", " +
                            llvm::Twine(o.right) + "))"),
                 Tensor();
        return Tensor(emit.inferred<PadOp>(
            in[0].getValue(), ArrayRef<int64_t>{0, o.top, o.left, 0},
            ArrayRef<int64_t>{0, o.bottom, o.right, 0}));
      });
}

Layer ModelBuilder::Cropping2D(Padding2DOptions o) {
  return makeLayer(
      "Cropping2D", "cropping2d", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        std::string amounts = "((" + std::to_string(o.top) + ", " +
                              std::to_string(o.bottom) + "), (" +
                              std::to_string(o.left) + ", " +
                              std::to_string(o.right) + "))";
        if (o.top < 0 || o.bottom < 0 || o.left < 0 || o.right < 0)
          return emit.error("cropping must not be negative, got " + amounts),
                 Tensor();
        // Keras refuses a cropping that leaves no rows or columns.
        int64_t h = in[0].shape()[1], w = in[0].shape()[2];
        if (o.top + o.bottom >= h || o.left + o.right >= w)
          return emit.error("cropping " + amounts + " leaves nothing of the " +
                            llvm::Twine(h) + "x" + llvm::Twine(w) + " input"),
                 Tensor();
        return Tensor(emit.inferred<PadOp>(
            in[0].getValue(), ArrayRef<int64_t>{0, -o.top, -o.left, 0},
            ArrayRef<int64_t>{0, -o.bottom, -o.right, 0}));
      });
}

Layer ModelBuilder::Flatten(LayerOptions o) {
  return makeLayer("Flatten", "flatten", o, 1, 1,
                   [this](LayerContext &layer, llvm::ArrayRef<Tensor> in) {
                     LAYER_EMITTER(layer);
                     return Tensor(emit.inferred<FlattenOp>(in[0].getValue()));
                   });
}

Layer ModelBuilder::Reshape(ReshapeOptions o) {
  return makeLayer(
      "Reshape", "reshape", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        // The input's size was checked when it was made: its element count
        // cannot overflow. The target's is checked below.
        int64_t elements = 1;
        for (int64_t d : in[0].shape().drop_front())
          elements *= d;
        SmallVector<int64_t> shape{in[0].shape()[0]};
        int64_t known = 1, unknownAt = -1;
        for (auto [i, d] : llvm::enumerate(o.target_shape)) {
          if (d == -1 && unknownAt < 0) {
            unknownAt = static_cast<int64_t>(i) + 1;
            shape.push_back(1);
            continue;
          }
          if (d <= 0)
            return emit.error("target_shape entries must be positive (one may "
                              "be -1), got " +
                              llvm::Twine(d)),
                   Tensor();
          std::optional<int64_t> product = llvm::checkedMul(known, d);
          if (!product)
            return emit.error("target_shape " + shapeText(o.target_shape) +
                              ": the product of its entries overflows 64 "
                              "bits"),
                   Tensor();
          known = *product;
          shape.push_back(d);
        }
        if (unknownAt > 0) {
          if (elements % known != 0)
            return emit.error("cannot infer the -1 of target_shape: " +
                              llvm::Twine(elements) +
                              " elements per sample do not divide by " +
                              llvm::Twine(known)),
                   Tensor();
          shape[unknownAt] = elements / known;
          known = elements;
        }
        if (known != elements)
          return emit.error("target_shape holds " + llvm::Twine(known) +
                            " elements per sample, the input has " +
                            llvm::Twine(elements)),
                 Tensor();
        // known == elements: the output has the input's size.
        auto type = RankedTensorType::get(shape, builder.getF32Type());
        return Tensor(
            ReshapeOp::create(builder, layer.loc, type, in[0].getValue()));
      });
}

Layer ModelBuilder::Activation(ActivationOptions o, llvm::StringRef className) {
  std::string base = llvm::StringSwitch<std::string>(className)
                         .Case("ReLU", "re_lu")
                         .Case("LeakyReLU", "leaky_re_lu")
                         .Case("Softmax", "softmax")
                         .Case("ELU", "elu")
                         .Default("activation");
  return makeLayer(
      className, base, o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) {
        LAYER_EMITTER(layer);
        Value x = in[0].getValue();
        // A ReLU layer with a cap or a threshold; with only a
        // slope it is a leaky_relu, as in Keras.
        if (o.activation == Activation::relu &&
            (o.max_value || o.threshold != 0.0)) {
          if (!(o.max_value.value_or(0.0) >= 0.0 && o.threshold >= 0.0 &&
                o.negative_slope >= 0.0))
            return emit.error("max_value, negative_slope and threshold "
                              "must not be negative"),
                   Tensor();
          return Tensor(ClippedReluOp::create(
              builder, layer.loc, x.getType(), x,
              o.max_value ? builder.getF64FloatAttr(*o.max_value) : FloatAttr(),
              builder.getF64FloatAttr(o.negative_slope),
              builder.getF64FloatAttr(o.threshold)));
        }
        if (o.activation == Activation::relu && o.negative_slope != 0.0) {
          if (!(o.negative_slope > 0.0))
            return emit.error("negative_slope must not be "
                              "negative"),
                   Tensor();
          return Tensor(
              emit.activation(x, Activation::leaky_relu, o.negative_slope));
        }
        return Tensor(
            emit.activation(x, o.activation, o.alpha, o.approximate, o.axis));
      });
}

Layer ModelBuilder::Dropout(DropoutOptions o) {
  return makeLayer(
      "Dropout", "dropout", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!(o.rate >= 0 && o.rate < 1))
          return emit.error("rate must be in [0, 1), got " +
                            std::to_string(o.rate)),
                 Tensor();
        Value x = in[0].getValue();
        DenseI64ArrayAttr noise;
        if (o.noise_shape) {
          llvm::ArrayRef<int64_t> shape = in[0].shape();
          if (o.noise_shape->size() != shape.size())
            return emit.error(
                       "noise_shape has " + llvm::Twine(o.noise_shape->size()) +
                       " dimensions, the input " + llvm::Twine(shape.size())),
                   Tensor();
          SmallVector<int64_t> dims;
          bool shared = false;
          for (auto [d, n] : llvm::enumerate(*o.noise_shape)) {
            if (n && *n != shape[d] && (*n != 1 || d == 0))
              return emit.error(
                         "noise_shape dimension " + llvm::Twine(d) + " is " +
                         llvm::Twine(*n) + ": expected " +
                         (d == 0 ? "null (the batch)" : "null, 1 or ") +
                         (d == 0 ? std::string() : std::to_string(shape[d])) +
                         (d == 0 ? ": a mask shared across the batch is not "
                                   "supported"
                                 : "")),
                     Tensor();
            dims.push_back(n.value_or(shape[d]));
            shared = shared || dims.back() != shape[d];
          }
          // The batch axis is never shared: the op holds the others.
          if (shared)
            noise = builder.getDenseI64ArrayAttr(
                llvm::ArrayRef<int64_t>(dims).drop_front());
        }
        return Tensor(DropoutOp::create(
            builder, layer.loc, x.getType(), x, builder.getF64FloatAttr(o.rate),
            builder.getI64IntegerAttr(
                o.seed.value_or(seedFromName(layer.name))),
            noise));
      });
}

Layer ModelBuilder::RandomImageTransform(RandomImageTransformOptions o) {
  static const llvm::StringMap<std::pair<const char *, const char *>> kNames = {
      {"flip", {"RandomFlip", "random_flip"}},
      {"rotation", {"RandomRotation", "random_rotation"}},
      {"zoom", {"RandomZoom", "random_zoom"}},
      {"translation", {"RandomTranslation", "random_translation"}},
      {"crop", {"RandomCrop", "random_crop"}}};
  auto names = kNames.lookup(o.kind);
  if (!names.first)
    names = {"RandomImageTransform", "random_image_transform"};
  return makeLayer(
      names.first, names.second, o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        auto badRange = [](const std::array<double, 2> &r) {
          return !(r[0] <= r[1]);
        };
        if (o.kind == "flip" && o.mode != "horizontal" &&
            o.mode != "vertical" && o.mode != "horizontal_and_vertical")
          return emit.error("mode must be horizontal, vertical or "
                            "horizontal_and_vertical, got '" +
                            o.mode + "'"),
                 Tensor();
        if ((o.kind == "rotation" && badRange(o.factor)) ||
            badRange(o.height_factor) ||
            (o.width_factor && badRange(*o.width_factor)))
          return emit.error("a factor range must have lower <= upper"),
                 Tensor();
        if (!llvm::is_contained(
                std::initializer_list<llvm::StringRef>{"reflect", "wrap",
                                                       "constant", "nearest"},
                llvm::StringRef(o.fill_mode)))
          return emit.error("fill_mode must be reflect, wrap, constant or "
                            "nearest, got '" +
                            o.fill_mode + "'"),
                 Tensor();
        if (o.interpolation != "bilinear" && o.interpolation != "nearest")
          return emit.error("interpolation must be bilinear or nearest, got '" +
                            o.interpolation + "'"),
                 Tensor();
        Value x = in[0].getValue();
        auto type = cast<RankedTensorType>(x.getType());
        auto range = [&](const std::array<double, 2> &r) {
          return builder.getF64ArrayAttr({r[0], r[1]});
        };
        OperationState state(layer.loc,
                             RandomImageTransformOp::getOperationName());
        state.addOperands(x);
        state.addAttribute("kind", builder.getStringAttr(o.kind));
        state.addAttribute("seed", builder.getI64IntegerAttr(o.seed.value_or(
                                       seedFromName(layer.name))));
        Type resultType = type;
        if (o.kind == "flip") {
          state.addAttribute("mode", builder.getStringAttr(o.mode));
        } else if (o.kind == "rotation") {
          state.addAttribute("factor", range(o.factor));
        } else if (o.kind == "zoom" || o.kind == "translation") {
          state.addAttribute("height_factor", range(o.height_factor));
          if (o.width_factor)
            state.addAttribute("width_factor", range(*o.width_factor));
        } else if (o.kind == "crop") {
          if (o.height <= 0 || o.width <= 0)
            return emit.error("crop size must be positive, got " +
                              llvm::Twine(o.height) + "x" +
                              llvm::Twine(o.width)),
                   Tensor();
          resultType = RankedTensorType::get(
              {type.getDimSize(0), o.height, o.width, type.getDimSize(3)},
              type.getElementType());
        }
        if (o.kind != "flip" && o.kind != "crop") {
          state.addAttribute("fill_mode", builder.getStringAttr(o.fill_mode));
          state.addAttribute("interpolation",
                             builder.getStringAttr(o.interpolation));
          state.addAttribute("fill_value",
                             builder.getF64FloatAttr(o.fill_value));
        }
        state.addTypes(resultType);
        return Tensor(builder.create(state)->getResult(0));
      });
}

Layer ModelBuilder::RandomContrast(RandomContrastOptions o) {
  return makeLayer(
      "RandomContrast", "random_contrast", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (!expectRank(in[0], 4, "NHWC", emit.error))
          return Tensor();
        if (!(o.factor[0] >= 0 && o.factor[0] <= 1 && o.factor[1] >= 0))
          return emit.error("factor must be in [0, 1] (lower) and >= 0 "
                            "(upper)"),
                 Tensor();
        if (!(o.value_range[0] < o.value_range[1]))
          return emit.error("value_range must be [low, high] with low < high"),
                 Tensor();
        Value x = in[0].getValue();
        return Tensor(RandomContrastOp::create(
            builder, layer.loc, x.getType(), x,
            builder.getI64IntegerAttr(
                o.seed.value_or(seedFromName(layer.name))),
            builder.getF64ArrayAttr({1.0 - o.factor[0], 1.0 + o.factor[1]}),
            builder.getF64ArrayAttr({o.value_range[0], o.value_range[1]})));
      });
}

Layer ModelBuilder::BatchNormalization(BatchNormalizationOptions o) {
  return makeLayer(
      "BatchNormalization", "batch_normalization", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (in[0].shape().size() < 2)
          return emit.error("expects input of rank >= 2, got rank " +
                            llvm::Twine(in[0].shape().size())),
                 Tensor();
        int64_t c = in[0].shape().back();
        Value gamma, beta;
        if (!emit.scaleAndCenter(o, c, gamma, beta))
          return Tensor();
        // Moving statistics are updated by the op itself, never by gradients.
        Value mean =
            emit.variable("moving_mean", {c}, o.moving_mean_initializer, false);
        Value variance = emit.variable("moving_variance", {c},
                                       o.moving_variance_initializer, false);
        if (!mean || !variance)
          return Tensor();
        size_t rank = in[0].shape().size();
        bool unbiased = o.tf2_fused && (rank == 4 || rank == 5);
        return Tensor(emit.inferred<BatchNormOp>(
            in[0].getValue(), mean, variance, gamma, beta,
            llvm::APFloat(o.epsilon), llvm::APFloat(o.momentum), unbiased));
      });
}

Layer ModelBuilder::LayerNormalization(LayerNormalizationOptions o) {
  return makeLayer(
      "LayerNormalization", "layer_normalization", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (in[0].shape().size() < 2)
          return emit.error("expects input of rank >= 2, got rank " +
                            llvm::Twine(in[0].shape().size())),
                 Tensor();
        int64_t c = in[0].shape().back();
        Value gamma, beta;
        if (!emit.scaleAndCenter(o, c, gamma, beta))
          return Tensor();
        return Tensor(emit.inferred<LayerNormOp>(in[0].getValue(), gamma, beta,
                                                 llvm::APFloat(o.epsilon)));
      });
}

Layer ModelBuilder::LayerScale(LayerScaleOptions o) {
  return makeLayer(
      "LayerScale", "layer_scale", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (in[0].shape().size() < 2)
          return emit.error("expects input of rank >= 2, got rank " +
                            llvm::Twine(in[0].shape().size())),
                 Tensor();
        int64_t c = in[0].shape().back();
        if (o.projection_dim != c)
          return emit.error("projection_dim " + llvm::Twine(o.projection_dim) +
                            " does not match the input's last axis, " +
                            llvm::Twine(c)),
                 Tensor();
        Initializer init = Initializer::of(InitKind::constant);
        init.value = o.init_values;
        // Keras' LayerScale names it nothing ("variable"); its attribute is
        // gamma. Weight files match it by position, the layer's only one.
        Value gamma = emit.variable("gamma", {c}, init, layer.trainable);
        if (!gamma)
          return Tensor();
        return Tensor(emit.inferred<ChannelScaleOp>(in[0].getValue(), gamma));
      });
}

Layer ModelBuilder::StochasticDepth(LayerOptions o) {
  return makeLayer("StochasticDepth", "stochastic_depth", o, 1, 1,
                   [](LayerContext &, llvm::ArrayRef<Tensor> in) -> Tensor {
                     return in[0];
                   });
}

/// The inputs of a merge layer, broadcast to one shape as Keras does: at one
/// rank, each dimension is the largest of the inputs', which the others
/// match or have as 1 (a squeeze-and-excite `[N, 1, 1, C]` times `[N, H, W,
/// C]`). Inputs with another shape go through graph.broadcast.
static std::optional<SmallVector<Value>>
broadcastInputs(OpBuilder &builder, Location loc, llvm::ArrayRef<Tensor> in,
                const std::function<void(const llvm::Twine &)> &error) {
  auto first = cast<RankedTensorType>(in[0].getValue().getType());
  SmallVector<int64_t> shape(first.getShape());
  auto mismatch = [&](Type a, Type b) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "inputs must have one shape or broadcast to one (each dimension "
          "equal or 1), got "
       << a << " and " << b;
    error(text);
    return std::nullopt;
  };
  for (Tensor t : in) {
    auto type = cast<RankedTensorType>(t.getValue().getType());
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return mismatch(first, type);
    for (auto [d, n] : llvm::enumerate(type.getShape())) {
      if (n == shape[d] || n == 1)
        continue;
      // The batch axis is never repeated: Keras' batch is one size.
      if (shape[d] != 1 || d == 0)
        return mismatch(first, type);
      shape[d] = n;
    }
  }
  auto result = RankedTensorType::get(shape, first.getElementType());
  SmallVector<Value> values;
  for (Tensor t : in) {
    Value v = t.getValue();
    if (v.getType() != result)
      v = BroadcastOp::create(builder, loc, result, v);
    values.push_back(v);
  }
  return values;
}

Layer ModelBuilder::makeMergeLayer(
    llvm::StringRef className, llvm::StringRef defaultBase,
    const LayerOptions &options, size_t maxInputs,
    std::function<Value(Location, Type, llvm::ArrayRef<Value>)> combine) {
  return makeLayer(
      className, defaultBase, options, 2, maxInputs,
      [this, combine = std::move(combine)](
          LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        std::optional<SmallVector<Value>> values =
            broadcastInputs(builder, layer.loc, in, emit.error);
        if (!values)
          return Tensor();
        return Tensor(combine(layer.loc, values->front().getType(), *values));
      });
}

Layer ModelBuilder::Add(LayerOptions o) {
  return makeMergeLayer("Add", "add", o, SIZE_MAX,
                        [this](Location loc, Type type, ArrayRef<Value> v) {
                          return AddOp::create(builder, loc, type, v);
                        });
}

Layer ModelBuilder::Multiply(LayerOptions o) {
  return makeMergeLayer("Multiply", "multiply", o, SIZE_MAX,
                        [this](Location loc, Type type, ArrayRef<Value> v) {
                          return MultiplyOp::create(builder, loc, type, v);
                        });
}

Layer ModelBuilder::Maximum(LayerOptions o) {
  return makeMergeLayer("Maximum", "maximum", o, SIZE_MAX,
                        [this](Location loc, Type type, ArrayRef<Value> v) {
                          return MaximumOp::create(builder, loc, type, v);
                        });
}

Layer ModelBuilder::Subtract(LayerOptions o) {
  return makeMergeLayer(
      "Subtract", "subtract", o, 2,
      [this](Location loc, Type type, ArrayRef<Value> v) -> Value {
        // a - b = a + (-1 * b): the gradient of b is -dy.
        Value negated = ScaleShiftOp::create(builder, loc, type, v[1],
                                             builder.getF64FloatAttr(-1.0),
                                             builder.getF64FloatAttr(0.0));
        return AddOp::create(builder, loc, type, ValueRange{v[0], negated});
      });
}

Layer ModelBuilder::CustomScaleLayer(CustomScaleOptions o) {
  double scale = o.scale;
  return makeMergeLayer(
      "CustomScaleLayer", "custom_scale_layer", o, 2,
      [this, scale](Location loc, Type type, ArrayRef<Value> v) -> Value {
        // inputs[0] + inputs[1] * scale.
        Value scaled = ScaleShiftOp::create(builder, loc, type, v[1],
                                            builder.getF64FloatAttr(scale),
                                            builder.getF64FloatAttr(0.0));
        return AddOp::create(builder, loc, type, ValueRange{v[0], scaled});
      });
}

Layer ModelBuilder::Average(LayerOptions o) {
  return makeMergeLayer(
      "Average", "average", o, SIZE_MAX,
      [this](Location loc, Type type, ArrayRef<Value> v) -> Value {
        Value sum = AddOp::create(builder, loc, type, v);
        return ScaleShiftOp::create(
            builder, loc, type, sum,
            builder.getF64FloatAttr(1.0 / static_cast<double>(v.size())),
            builder.getF64FloatAttr(0.0));
      });
}

Layer ModelBuilder::Rescaling(RescalingOptions o) {
  return makeLayer(
      "Rescaling", "rescaling", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        Value x = in[0].getValue();
        if (o.scales.empty() && o.offsets.empty())
          return Tensor(
              ScaleShiftOp::create(builder, layer.loc, x.getType(), x,
                                   builder.getF64FloatAttr(o.scale),
                                   builder.getF64FloatAttr(o.offset)));
        std::vector<double> scales =
            o.scales.empty() ? std::vector<double>{o.scale} : o.scales;
        std::vector<double> offsets =
            o.offsets.empty() ? std::vector<double>{o.offset} : o.offsets;
        int64_t c = in[0].shape().empty() ? 0 : in[0].shape().back();
        for (const std::vector<double> *v : {&scales, &offsets})
          if (v->size() != 1 && static_cast<int64_t>(v->size()) != c)
            return emit.error("scale and offset need 1 or " + llvm::Twine(c) +
                              " elements (the channels of the last axis), "
                              "got " +
                              llvm::Twine(v->size())),
                   Tensor();
        return Tensor(scaleShift(layer.loc, x, scales, offsets));
      });
}

/// x * scale + offset, per channel of the last axis where a list has one
/// element per channel (graph.channel_scale_shift), else scalars.
Value ModelBuilder::scaleShift(Location loc, Value x,
                               llvm::ArrayRef<double> scales,
                               llvm::ArrayRef<double> offsets) {
  if (scales.size() == 1 && offsets.size() == 1)
    return ScaleShiftOp::create(builder, loc, x.getType(), x,
                                builder.getF64FloatAttr(scales[0]),
                                builder.getF64FloatAttr(offsets[0]));
  int64_t c = cast<RankedTensorType>(x.getType()).getShape().back();
  SmallVector<double> s, o;
  for (int64_t k = 0; k < c; ++k) {
    s.push_back(scales[scales.size() == 1 ? 0 : k]);
    o.push_back(offsets[offsets.size() == 1 ? 0 : k]);
  }
  return ChannelScaleShiftOp::create(builder, loc, x.getType(), x,
                                     builder.getDenseF64ArrayAttr(s),
                                     builder.getDenseF64ArrayAttr(o));
}

Layer ModelBuilder::Normalization(NormalizationOptions o) {
  return makeLayer(
      "Normalization", "normalization", o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        if (in[0].shape().empty())
          return emit.error("expects an input of rank >= 1"), Tensor();
        int64_t c = in[0].shape().back();
        Value x = in[0].getValue();
        if (o.mean && o.variance) {
          // Constants of the config (Keras keeps no weights then): x * s -
          // mean * s with s = 1 / max(sqrt(variance), epsilon).
          std::vector<double> scales, offsets;
          for (const std::vector<double> *v : {&*o.mean, &*o.variance})
            if (v->size() != 1 && static_cast<int64_t>(v->size()) != c)
              return emit.error("mean and variance need 1 or " +
                                llvm::Twine(c) +
                                " elements (the channels), got " +
                                llvm::Twine(v->size())),
                     Tensor();
          size_t n = std::max(o.mean->size(), o.variance->size());
          for (size_t k = 0; k < n; ++k) {
            double mean = (*o.mean)[o.mean->size() == 1 ? 0 : k];
            double variance = (*o.variance)[o.variance->size() == 1 ? 0 : k];
            if (!(variance >= 0))
              return emit.error("variance must not be negative"), Tensor();
            double s = 1.0 / std::max(std::sqrt(variance), o.epsilon);
            scales.push_back(s);
            offsets.push_back(-mean * s);
          }
          return Tensor(scaleShift(layer.loc, x, scales, offsets));
        }
        // Statistics, never trained: Keras' adapt() or a weight file sets
        // them (0 and 1 until then), as batch norm's moving statistics.
        Value mean =
            emit.variable("mean", {c}, Initializer::of(InitKind::zeros), false);
        Value variance = emit.variable("variance", {c},
                                       Initializer::of(InitKind::ones), false);
        if (!mean || !variance)
          return Tensor();
        return Tensor(NormalizeOp::create(builder, layer.loc, x.getType(), x,
                                          variance, mean,
                                          builder.getF64FloatAttr(o.epsilon)));
      });
}

Layer ModelBuilder::ScalarOp(llvm::StringRef className, ScalarOpOptions o) {
  using Kind = ScalarOpOptions::Kind;
  std::string base = llvm::StringRef(className).lower();
  return makeLayer(
      className, base, o, 1, 1,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) -> Tensor {
        LAYER_EMITTER(layer);
        double scale = 1.0, offset = 0.0;
        switch (o.kind) {
        case Kind::add:
          offset = o.scalar;
          break;
        case Kind::subtract: // x - c, or c - x
          scale = o.scalarFirst ? -1.0 : 1.0;
          offset = o.scalarFirst ? o.scalar : -o.scalar;
          break;
        case Kind::multiply:
          scale = o.scalar;
          break;
        case Kind::divide:
          if (o.scalarFirst)
            return emit.error("dividing a scalar by a tensor is not "
                              "supported"),
                   Tensor();
          scale = 1.0 / o.scalar;
          break;
        }
        Value x = in[0].getValue();
        return Tensor(ScaleShiftOp::create(builder, layer.loc, x.getType(), x,
                                           builder.getF64FloatAttr(scale),
                                           builder.getF64FloatAttr(offset)));
      });
}

Layer ModelBuilder::Concatenate(ConcatenateOptions o) {
  return makeLayer(
      "Concatenate", "concatenate", o, 2, SIZE_MAX,
      [this, o](LayerContext &layer, llvm::ArrayRef<Tensor> in) {
        LAYER_EMITTER(layer);
        SmallVector<Value> values;
        for (Tensor t : in)
          values.push_back(t.getValue());
        return Tensor(emit.inferred<ConcatenateOp>(ValueRange(values), o.axis));
      });
}

OwningOpRef<ModuleOp>
ModelBuilder::finish(llvm::ArrayRef<Tensor> outputs,
                     std::optional<Training> training,
                     llvm::ArrayRef<std::string> outputNames) {
  if (failed || llvm::any_of(outputs, [](Tensor t) { return !t; }))
    return nullptr;
  if (outputs.empty()) {
    mlir::emitError(baseLoc) << "a model needs at least one output";
    return nullptr;
  }
  if (!outputNames.empty() && outputNames.size() != outputs.size()) {
    mlir::emitError(baseLoc) << outputNames.size() << " output names for "
                             << outputs.size() << " outputs";
    return nullptr;
  }
  if (training && training->losses.size() != outputs.size()) {
    mlir::emitError(training->loc.value_or(baseLoc))
        << "a model with " << outputs.size() << " outputs needs "
        << outputs.size() << " losses (one per output), got "
        << training->losses.size();
    return nullptr;
  }
  if (training && outputs.size() > 1 && outputNames.empty()) {
    mlir::emitError(baseLoc) << "a model with " << outputs.size()
                             << " outputs needs their names to be trained";
    return nullptr;
  }
  SmallVector<Value> values;
  for (Tensor t : outputs)
    values.push_back(t.getValue());
  ArrayAttr names;
  if (!outputNames.empty()) {
    SmallVector<StringRef> refs(outputNames.begin(), outputNames.end());
    names = builder.getStrArrayAttr(refs);
  }
  OutputOp::create(builder, baseLoc, values, names);

  if (training) {
    builder.setInsertionPointToEnd(module->getBody());
    using llvm::APFloat;
    auto scheduleAttr = [&](const std::optional<Schedule> &s) -> Attribute {
      if (!s)
        return {};
      switch (s->kind) {
      case Schedule::Kind::exponential_decay:
        return ExponentialDecayAttr::get(context, APFloat(s->decay_steps),
                                         APFloat(s->decay_rate), s->staircase);
      case Schedule::Kind::inverse_time_decay:
        return InverseTimeDecayAttr::get(context, APFloat(s->decay_steps),
                                         APFloat(s->decay_rate), s->staircase);
      case Schedule::Kind::polynomial_decay:
        return PolynomialDecayAttr::get(context, APFloat(s->decay_steps),
                                        APFloat(s->end_learning_rate),
                                        APFloat(s->power), s->cycle);
      case Schedule::Kind::cosine_decay:
        return CosineDecayAttr::get(
            context, APFloat(s->decay_steps), APFloat(s->alpha),
            APFloat(s->warmup_target), APFloat(s->warmup_steps));
      case Schedule::Kind::cosine_decay_restarts:
        return CosineDecayRestartsAttr::get(
            context, APFloat(s->decay_steps), APFloat(s->t_mul),
            APFloat(s->m_mul), APFloat(s->alpha));
      case Schedule::Kind::piecewise_constant_decay:
        return PiecewiseConstantDecayAttr::get(
            context, mlir::DenseF64ArrayAttr::get(context, s->boundaries),
            mlir::DenseF64ArrayAttr::get(context, s->values));
      }
      return {};
    };
    Attribute optimizer = std::visit(
        [&](auto &&opt) -> Attribute {
          using T = std::decay_t<decltype(opt)>;
          if constexpr (std::is_same_v<T, SGD>)
            return SGDAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate), APFloat(opt.momentum), opt.nesterov,
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
          else if constexpr (std::is_same_v<T, Adam>)
            return AdamAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate), APFloat(opt.beta_1),
                APFloat(opt.beta_2), APFloat(opt.epsilon), opt.amsgrad,
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
          else if constexpr (std::is_same_v<T, RMSprop>)
            return RMSpropAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate), APFloat(opt.rho),
                APFloat(opt.momentum), APFloat(opt.epsilon), opt.centered,
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
          else if constexpr (std::is_same_v<T, Adagrad>)
            return AdagradAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate),
                APFloat(opt.initial_accumulator_value), APFloat(opt.epsilon),
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
          else if constexpr (std::is_same_v<T, Adamax>)
            return AdamaxAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate), APFloat(opt.beta_1),
                APFloat(opt.beta_2), APFloat(opt.epsilon),
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
          else
            return NadamAttr::getChecked(
                [&] { return mlir::emitError(baseLoc); }, context,
                APFloat(opt.learning_rate), APFloat(opt.beta_1),
                APFloat(opt.beta_2), APFloat(opt.epsilon),
                APFloat(opt.clipnorm), APFloat(opt.global_clipnorm),
                APFloat(opt.clipvalue), APFloat(opt.weight_decay),
                scheduleAttr(opt.schedule), opt.gradient_accumulation_steps);
        },
        training->optimizer);
    if (!optimizer)
      return nullptr;
    auto optionalF64 = [](const std::optional<double> &value) {
      return value ? std::optional<APFloat>(APFloat(*value)) : std::nullopt;
    };
    SmallVector<Attribute> losses;
    for (auto [index, loss] : llvm::enumerate(training->losses)) {
      // Keras' axis of a loss other than Dice's and Tversky's is the one its
      // function reduces (or takes the softmax over): only the last is
      // supported, by any of its names.
      llvm::ArrayRef<int64_t> overlapAxes = loss.axis;
      if (loss.loss != LossKind::dice && loss.loss != LossKind::tversky) {
        overlapAxes = {};
        int64_t rank =
            cast<RankedTensorType>(values[index].getType()).getRank();
        for (int64_t axis : loss.axis)
          if (axis != -1 && axis != rank - 1) {
            mlir::emitError(training->loc.value_or(baseLoc))
                << "loss axis " << axis << " is not the last axis of the rank-"
                << rank << " output"
                << (outputNames.empty() ? "" : " '" + outputNames[index] + "'")
                << "; only the last (-1) is supported";
            return nullptr;
          }
      }
      SmallVector<Attribute> metrics;
      for (const Metric &m : loss.metrics) {
        MetricAttr metric = MetricAttr::getChecked(
            [&] { return mlir::emitError(training->loc.value_or(baseLoc)); },
            context, m.kind, llvm::StringRef(m.name), m.k, APFloat(m.threshold),
            m.class_id, m.num_thresholds, m.curve, m.summation, m.from_logits);
        if (!metric)
          return nullptr;
        metrics.push_back(metric);
      }
      std::optional<APFloat> smoothing;
      if (loss.label_smoothing > 0)
        smoothing = APFloat(loss.label_smoothing);
      OutputLossAttr attr = OutputLossAttr::getChecked(
          [&] { return mlir::emitError(training->loc.value_or(baseLoc)); },
          context, loss.loss, APFloat(loss.weight), loss.from_logits, smoothing,
          optionalF64(loss.delta), optionalF64(loss.alpha),
          optionalF64(loss.beta), optionalF64(loss.gamma),
          loss.apply_class_balancing, loss.ignore_class, overlapAxes,
          loss.sum_reduction,
          metrics.empty() ? ArrayAttr() : builder.getArrayAttr(metrics));
      if (!attr)
        return nullptr;
      losses.push_back(attr);
    }
    mlir::FloatAttr emaMomentum;
    mlir::IntegerAttr emaFrequency;
    if (training->ema_momentum) {
      emaMomentum = builder.getF64FloatAttr(*training->ema_momentum);
      if (training->ema_overwrite_frequency > 0)
        emaFrequency =
            builder.getI64IntegerAttr(training->ema_overwrite_frequency);
    }
    mlir::FloatAttr lossScale;
    mlir::IntegerAttr growthSteps;
    if (training->loss_scale) {
      lossScale = builder.getF64FloatAttr(training->loss_scale->initial_scale);
      growthSteps =
          builder.getI64IntegerAttr(training->loss_scale->dynamic_growth_steps);
    }
    // Said only where it decides something: a layer computes in float16.
    bool float16 = false;
    model.walk([&](mlir::Operation *op) {
      if (auto type = op->getAttrOfType<mlir::TypeAttr>(
              GraphDialect::getComputeTypeAttrName()))
        float16 |= type.getValue().isF16();
    });
    TrainingOp::create(builder, training->loc.value_or(baseLoc),
                       model.getSymName(), builder.getArrayAttr(losses),
                       emaMomentum, emaFrequency, lossScale, growthSteps,
                       training->no_auto_loss_scale && float16, optimizer,
                       batchSize);
  }
  if (mlir::failed(mlir::verify(*module)))
    return nullptr;
  return std::move(module);
}

} // namespace graph::builder
