//===- ModelBuilder.h - Keras-style C++ model builder -----------*- C++ -*-===//
//
// Builds `graph` dialect modules the way Keras' functional API builds models:
//
//   ModelBuilder model(context, "cnn", /*batchSize=*/256);
//   Tensor x = model.Input({28, 28, 1});
//   x = model.Conv2D({.filters = 32, .kernel_size = {3, 3},
//                     .activation = Activation::relu})(x);
//   ...
//   auto module = model.finish({x}, Training{...});
//
// This is the one place that knows how a Keras layer becomes graph ops; the
// Keras JSON importer only parses JSON and calls it, so both produce the same
// IR. Errors are MLIR diagnostics at the layer's location that name the layer
// and its class; after the first error, later layers return null tensors and
// finish() fails.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_BUILDER_MODELBUILDER_H
#define FRONTENDS_BUILDER_MODELBUILDER_H

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace graph::builder {

using mlir::graph::InitKind;
using mlir::graph::LossKind;
using mlir::graph::Padding;

/// A symbolic tensor of the model under construction; null after an error.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(mlir::Value value) : value(value) {}
  mlir::Value getValue() const { return value; }
  explicit operator bool() const { return static_cast<bool>(value); }
  /// The full shape, batch dimension first.
  llvm::ArrayRef<int64_t> shape() const;

private:
  mlir::Value value;
};

/// Keras activations; `linear` adds no op.
enum class Activation {
  linear,
  relu,
  sigmoid,
  tanh,
  softmax,
  elu,
  leaky_relu,
  gelu,
  relu6,
  silu,         // also "swish"
  hard_sigmoid, // Keras 3's: relu6(x + 3) / 6
  hard_silu     // also "hard_swish"
};
/// The activation named as Keras names it ("relu", "softmax", ...).
std::optional<Activation> parseActivation(llvm::StringRef name);
llvm::StringRef stringifyActivation(Activation activation);

/// A Keras initializer with its parameters (defaults as in Keras).
struct Initializer {
  InitKind kind = InitKind::glorot_uniform;
  double mean = 0.0, stddev = 0.05;
  double minval = -0.05, maxval = 0.05;
  double value = 0.0;
  std::optional<int64_t> seed;
  /// A VarianceScaling that no named kind is (EfficientNet's scale 2,
  /// fan_out): the variable's shape gives its fans, and with them the
  /// uniform limit or the truncated normal's stddev that `kind` then takes.
  struct VarianceScaling {
    double scale = 1.0;
    enum class Mode { fan_in, fan_out, fan_avg } mode = Mode::fan_in;
    enum class Distribution {
      truncated_normal,
      untruncated_normal,
      uniform
    } distribution = Distribution::truncated_normal;
  };
  std::optional<VarianceScaling> variance_scaling;

  static Initializer of(InitKind kind) { return Initializer{.kind = kind}; }
};

/// Keras' dtype policies a layer may have. The mixed ones compute in
/// bfloat16 or float16 and keep float32 variables; the importer refuses
/// Keras' others (pure bfloat16 or float16 variables, float64, quantized).
enum class DTypePolicy { float32, mixed_bfloat16, mixed_float16 };

/// Keras' name of a policy ("mixed_bfloat16").
llvm::StringRef policyName(DTypePolicy policy);

/// Options every layer takes.
struct LayerOptions {
  /// Keras' name; empty gives Keras' default (`conv2d`, `conv2d_1`, ...).
  std::string name;
  bool trainable = true;
  /// Where diagnostics point (the importer passes the file); unknown if null.
  std::optional<mlir::Location> loc;
  /// Keras' `dtype`: under a mixed policy the layer's ops carry
  /// graph.compute_type, which graph-assign-precision makes real.
  DTypePolicy dtype_policy = DTypePolicy::float32;
};

struct Conv2DOptions : LayerOptions {
  int64_t filters = 0;
  std::array<int64_t, 2> kernel_size = {0, 0};
  std::array<int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  std::array<int64_t, 2> dilation_rate = {1, 1};
  /// Keras' `groups`: channels and filters split into this many groups;
  /// the kernel is [kh, kw, C / groups, filters].
  int64_t groups = 1;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer bias_initializer = Initializer::of(InitKind::zeros);
};

/// Keras Conv2DTranspose: kernel [kh, kw, filters, C] (Keras' layout), the
/// input gradient of a Conv2D with that kernel; no dilation, no
/// output_padding.
struct Conv2DTransposeOptions : LayerOptions {
  int64_t filters = 0;
  std::array<int64_t, 2> kernel_size = {0, 0};
  std::array<int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer bias_initializer = Initializer::of(InitKind::zeros);
};

/// Keras DepthwiseConv2D: each input channel convolved with its own
/// depth_multiplier filters; kernel [kh, kw, C, depth_multiplier], output
/// channel c * depth_multiplier + j.
struct DepthwiseConv2DOptions : LayerOptions {
  std::array<int64_t, 2> kernel_size = {0, 0};
  std::array<int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  int64_t depth_multiplier = 1;
  std::array<int64_t, 2> dilation_rate = {1, 1};
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer depthwise_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer bias_initializer = Initializer::of(InitKind::zeros);
};

/// Keras SeparableConv2D: a depthwise convolution (no bias) and a 1x1
/// convolution to `filters`, then bias and activation; variables
/// depthwise_kernel, pointwise_kernel, bias.
struct SeparableConv2DOptions : LayerOptions {
  int64_t filters = 0;
  std::array<int64_t, 2> kernel_size = {0, 0};
  std::array<int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  int64_t depth_multiplier = 1;
  std::array<int64_t, 2> dilation_rate = {1, 1};
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer depthwise_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer pointwise_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer bias_initializer = Initializer::of(InitKind::zeros);
};

struct DenseOptions : LayerOptions {
  int64_t units = 0;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::of(InitKind::glorot_uniform);
  Initializer bias_initializer = Initializer::of(InitKind::zeros);
};

struct Pool2DOptions : LayerOptions {
  std::array<int64_t, 2> pool_size = {2, 2};
  /// Keras' default: the pool size.
  std::optional<std::array<int64_t, 2>> strides;
  Padding padding = Padding::valid;
};

struct GlobalPool2DOptions : LayerOptions {
  bool keepdims = false;
};

struct PermuteOptions : LayerOptions {
  /// Keras' dims: a permutation of 1..rank-1 (the batch axis stays first).
  std::vector<int64_t> dims;
};

struct UpSampling2DOptions : LayerOptions {
  std::array<int64_t, 2> size = {2, 2};
};

/// ZeroPadding2D's padding and Cropping2D's cropping of H and W.
struct Padding2DOptions : LayerOptions {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
};

struct ActivationOptions : LayerOptions {
  Activation activation = Activation::linear;
  /// elu's and leaky_relu's alpha (Keras 3 calls the latter negative_slope).
  std::optional<double> alpha;
  /// gelu's tanh approximation.
  bool approximate = false;
  /// softmax's axis.
  int64_t axis = -1;
  /// The ReLU layer's settings (Keras' defaults: no cap, 0, 0).
  std::optional<double> max_value;
  double negative_slope = 0.0, threshold = 0.0;
};

struct ReshapeOptions : LayerOptions {
  /// The target shape without the batch dimension; one entry may be -1.
  std::vector<int64_t> target_shape;
};

struct DropoutOptions : LayerOptions {
  double rate = 0.0;
  std::optional<int64_t> seed;
  /// Keras' noise_shape: one entry per input axis, each 1 (the mask is
  /// shared along that axis) or unset (the input's dimension). Unset: one
  /// mask element per input element.
  std::optional<std::vector<std::optional<int64_t>>> noise_shape;
};

struct NormalizationOptions : LayerOptions {
  /// Keras' Normalization over the last axis. Without mean and variance in
  /// the config, they are non-trainable variables "mean" and "variance"
  /// (0 and 1 until weights are loaded); with them, constants: one value
  /// for every channel or one per channel.
  std::optional<std::vector<double>> mean, variance;
  double epsilon = 1e-7; // Keras' backend.epsilon()
};

/// A Keras 3 operation layer with one scalar argument (keras.src.ops Add,
/// Subtract, Multiply, TrueDivide: `x + 3.0`, `x * (1 / 6)`, `3.0 - x`).
struct ScalarOpOptions : LayerOptions {
  enum class Kind { add, subtract, multiply, divide } kind = Kind::add;
  double scalar = 0.0;
  /// Whether the scalar is the first operand (`3.0 - x`).
  bool scalarFirst = false;
};

/// Keras' random image layers that resample: RandomFlip (kind "flip"),
/// RandomRotation ("rotation"), RandomZoom ("zoom"), RandomTranslation
/// ("translation") and RandomCrop ("crop"). Active in training only (a
/// crop keeps the centre window in evaluation).
struct RandomImageTransformOptions : LayerOptions {
  std::string kind;
  /// flip: horizontal, vertical or horizontal_and_vertical.
  std::string mode = "horizontal_and_vertical";
  /// rotation: [lower, upper] in turns.
  std::array<double, 2> factor{0.0, 0.0};
  /// zoom, translation: [lower, upper] fractions; a zoom without a width
  /// factor zooms both axes alike.
  std::array<double, 2> height_factor{0.0, 0.0};
  std::optional<std::array<double, 2>> width_factor;
  std::string fill_mode = "reflect", interpolation = "bilinear";
  double fill_value = 0.0;
  /// crop: the output's size.
  int64_t height = 0, width = 0;
  std::optional<int64_t> seed;
};

/// Keras' RandomContrast: the factor is drawn in [1 - factor[0],
/// 1 + factor[1]], the result clipped to value_range.
struct RandomContrastOptions : LayerOptions {
  std::array<double, 2> factor{0.0, 0.0};
  std::array<double, 2> value_range{0.0, 255.0};
  std::optional<int64_t> seed;
};

struct BatchNormalizationOptions : LayerOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  Initializer beta_initializer = Initializer::of(InitKind::zeros);
  Initializer gamma_initializer = Initializer::of(InitKind::ones);
  Initializer moving_mean_initializer = Initializer::of(InitKind::zeros);
  Initializer moving_variance_initializer = Initializer::of(InitKind::ones);
  /// tf.keras 2's fused kernel (4-D and 5-D inputs, unless `fused` is
  /// false) updates the moving variance with the unbiased batch variance;
  /// Keras 3, and tf.keras 2 on other ranks, with the biased one. The
  /// importer sets this for models tf.keras 2 wrote.
  bool tf2_fused = false;
};

/// Keras' LayerNormalization over the last axis.
struct LayerNormalizationOptions : LayerOptions {
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  Initializer beta_initializer = Initializer::of(InitKind::zeros);
  Initializer gamma_initializer = Initializer::of(InitKind::ones);
};

/// keras.applications' custom layers: ConvNeXt's LayerScale (x * gamma,
/// gamma [projection_dim] starting at init_values) and StochasticDepth
/// (the identity at drop_path_rate 0), InceptionResNetV2's
/// CustomScaleLayer (inputs [a, b] -> a + b * scale).
struct LayerScaleOptions : LayerOptions {
  double init_values = 1e-6;
  int64_t projection_dim = 0;
};

struct CustomScaleOptions : LayerOptions {
  double scale = 1.0;
};

struct RescalingOptions : LayerOptions {
  double scale = 1.0, offset = 0.0;
  /// Per-channel lists (one element per channel of the last axis, or one
  /// for all), in place of scale and offset when either is non-empty.
  std::vector<double> scales, offsets;
};

struct ConcatenateOptions : LayerOptions {
  int64_t axis = -1;
};

/// A Keras learning-rate schedule (keras.optimizers.schedules): the
/// optimizer's learning_rate is its initial_learning_rate. Each kind reads
/// its own fields.
struct Schedule {
  enum class Kind {
    exponential_decay,
    inverse_time_decay,
    polynomial_decay,
    cosine_decay,
    cosine_decay_restarts,
    piecewise_constant_decay
  };
  Kind kind = Kind::exponential_decay;
  double decay_steps = 1, decay_rate = 0;
  bool staircase = false;
  double end_learning_rate = 0.0001, power = 1.0;
  bool cycle = false;
  double alpha = 0, warmup_target = 0, warmup_steps = 0;
  /// CosineDecayRestarts: decay_steps is its first_decay_steps.
  double t_mul = 2.0, m_mul = 1.0;
  std::vector<double> boundaries, values;
};

// Each optimizer also takes Keras' clipping (at most one of clipnorm,
// global_clipnorm, clipvalue), decoupled weight_decay (0 is off), a
// learning-rate schedule and gradient_accumulation_steps (0 is off).
struct SGD {
  double learning_rate = 0.01, momentum = 0.0;
  bool nesterov = false;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
struct Adam {
  double learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  bool amsgrad = false;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
struct RMSprop {
  double learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = 1e-7;
  bool centered = false;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
struct Adagrad {
  double learning_rate = 0.001, initial_accumulator_value = 0.1, epsilon = 1e-7;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
struct Adamax {
  double learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
struct Nadam {
  double learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  double clipnorm = 0, global_clipnorm = 0, clipvalue = 0, weight_decay = 0;
  std::optional<Schedule> schedule;
  int64_t gradient_accumulation_steps = 0;
};
using Optimizer = std::variant<SGD, Adam, RMSprop, Adagrad, Adamax, Nadam>;

/// Keras' NEG_INF (metrics_utils): Precision's and Recall's threshold when
/// they have a top_k and no thresholds.
inline constexpr double kKerasTopKThreshold = -1e10;

/// One of Keras' compiled metrics (#graph.metric).
struct Metric {
  mlir::graph::MetricKind kind = mlir::graph::MetricKind::accuracy;
  /// The name Keras logs it under (without an output's prefix).
  std::string name = "accuracy";
  /// The top-k accuracies' k; Precision's and Recall's top_k (0: off).
  int64_t k = 0;
  /// Binary accuracy's, Precision's and Recall's threshold, as it applies:
  /// Keras' default is 0.5, or kKerasTopKThreshold for a Precision or
  /// Recall with top_k (thresholds=None there counts exactly the top k).
  double threshold = 0.5;
  /// Precision's and Recall's class_id (-1: off).
  int64_t class_id = -1;
  /// AUC's options.
  int64_t num_thresholds = 200;
  mlir::graph::AucCurve curve = mlir::graph::AucCurve::roc;
  mlir::graph::AucSummation summation =
      mlir::graph::AucSummation::interpolation;
  bool from_logits = false;
};

/// One output's loss, its weight and its metrics: what compile()'s `loss`,
/// `loss_weights` and `metrics` give it (#graph.output_loss).
struct OutputLoss {
  LossKind loss = LossKind::categorical_crossentropy;
  bool from_logits = false;
  /// Keras' label_smoothing (categorical and binary cross-entropy; 0 is
  /// off).
  double label_smoothing = 0;
  /// Keras' Huber delta (unset: Keras' default, 1).
  std::optional<double> delta;
  /// The focal cross-entropies' alpha and gamma, Tversky's alpha and beta
  /// (unset: Keras' defaults), and BinaryFocalCrossentropy's
  /// apply_class_balancing.
  std::optional<double> alpha, beta, gamma;
  bool apply_class_balancing = false;
  /// Keras' reduction="sum" (else sum_over_batch_size, the mean).
  bool sum_reduction = false;
  /// SparseCategoricalCrossentropy's ignore_class.
  std::optional<int64_t> ignore_class;
  /// Dice's and Tversky's axis (empty: None, the whole batch). The other
  /// losses' axis (empty: -1), which must be the output's last.
  std::vector<int64_t> axis;
  /// The output's entry of Keras' loss_weights.
  double weight = 1;
  std::vector<Metric> metrics = {Metric{}};
};

/// What Keras' `model.compile(...)` says.
struct Training {
  /// One per output of the model, in its outputs' order.
  std::vector<OutputLoss> losses = {OutputLoss{}};
  /// Keras' use_ema: the moving average's momentum (unset: off) and
  /// ema_overwrite_frequency (0: never during training).
  std::optional<double> ema_momentum;
  int64_t ema_overwrite_frequency = 0;
  Optimizer optimizer = Adam{};
  /// Keras' LossScaleOptimizer around `optimizer`: its initial_scale and
  /// dynamic_growth_steps (unset: loss scaling only where the model
  /// computes in float16, with Keras' defaults).
  struct LossScale {
    double initial_scale = 32768.0;
    int64_t dynamic_growth_steps = 2000;
  };
  std::optional<LossScale> loss_scale;
  /// The model's own dtype policy is known and is not mixed_float16: Keras'
  /// compile wraps no LossScaleOptimizer, so layers that compute in float16
  /// by their own dtype train unscaled.
  bool no_auto_loss_scale = false;
  /// Where diagnostics about the training (a loss that does not fit the
  /// output) point: the importer passes the output layer. The model's
  /// location if unset.
  std::optional<mlir::Location> loc;
};

/// A layer object. Calling it on tensors adds its ops; its variables are
/// created on the first call and shared by later calls, as in Keras.
class Layer {
public:
  using Apply = std::function<Tensor(llvm::ArrayRef<Tensor>)>;
  explicit Layer(Apply apply) : apply(std::move(apply)) {}
  Tensor operator()(Tensor input) const { return apply({input}); }
  Tensor operator()(std::initializer_list<Tensor> inputs) const {
    return apply(llvm::ArrayRef<Tensor>(inputs.begin(), inputs.size()));
  }
  Tensor operator()(llvm::ArrayRef<Tensor> inputs) const {
    return apply(inputs);
  }

private:
  Apply apply;
};

class ModelBuilder {
public:
  /// `batchSize` is the global batch: every input gets it as dimension 0.
  ModelBuilder(mlir::MLIRContext *context, llvm::StringRef modelName,
               int64_t batchSize, std::optional<mlir::Location> loc = {});
  ~ModelBuilder();

  /// Changes the global batch, before the first Input: the importer learns
  /// it from the model's inputs after it has created the layers.
  void setBatchSize(int64_t size);

  /// A model input of `shape` (without the batch dimension).
  Tensor Input(llvm::ArrayRef<int64_t> shape, LayerOptions options = {});

  Layer Conv2D(Conv2DOptions options);
  Layer DepthwiseConv2D(DepthwiseConv2DOptions options);
  Layer SeparableConv2D(SeparableConv2DOptions options);
  Layer Conv2DTranspose(Conv2DTransposeOptions options);
  Layer Dense(DenseOptions options);
  Layer MaxPooling2D(Pool2DOptions options = {});
  Layer AveragePooling2D(Pool2DOptions options = {});
  Layer GlobalAveragePooling2D(GlobalPool2DOptions options = {});
  /// The maximum over H and W: a max_pool2d whose window is the whole
  /// image (and a reshape to [N, C] without keepdims).
  Layer GlobalMaxPooling2D(GlobalPool2DOptions options = {});
  /// Nearest-neighbour upsampling by an integer size: each pixel repeated
  /// size[0] x size[1] times, which is size[0] * size[1] times the adjoint
  /// of average pooling (avg_pool2d_grad) with that window and stride.
  Layer UpSampling2D(UpSampling2DOptions options);
  /// Permutes the axes after the batch (graph.transpose).
  Layer Permute(PermuteOptions options);
  /// Zeros around H and W of an NHWC input (graph.pad).
  Layer ZeroPadding2D(Padding2DOptions options);
  /// Drops rows and columns at the borders of H and W (graph.pad with
  /// negative amounts).
  Layer Cropping2D(Padding2DOptions options);
  Layer Flatten(LayerOptions options = {});
  Layer Reshape(ReshapeOptions options);
  /// Keras' Activation layer and the standalone ReLU, Softmax, ELU,
  /// LeakyReLU layers.
  Layer Activation(ActivationOptions options,
                   llvm::StringRef className = "Activation");
  Layer Dropout(DropoutOptions options);
  Layer RandomImageTransform(RandomImageTransformOptions options);
  Layer RandomContrast(RandomContrastOptions options);
  Layer BatchNormalization(BatchNormalizationOptions options = {});
  Layer LayerNormalization(LayerNormalizationOptions options = {});
  Layer LayerScale(LayerScaleOptions options);
  /// The identity: StochasticDepth with drop_path_rate 0 (the importer
  /// refuses other rates).
  Layer StochasticDepth(LayerOptions options = {});
  Layer CustomScaleLayer(CustomScaleOptions options);
  Layer Add(LayerOptions options = {});
  Layer Concatenate(ConcatenateOptions options = {});
  /// Keras' merge layers: Multiply (2+ inputs), Subtract (2), Average (2+),
  /// Maximum (2+).
  Layer Multiply(LayerOptions options = {});
  Layer Subtract(LayerOptions options = {});
  Layer Average(LayerOptions options = {});
  Layer Maximum(LayerOptions options = {});
  /// x * scale + offset.
  Layer Rescaling(RescalingOptions options);
  Layer Normalization(NormalizationOptions options);
  Layer ScalarOp(llvm::StringRef className, ScalarOpOptions options);

  /// Reports an error at `loc` about layer `name` of class `className`, and
  /// marks the model failed. The importer uses it for config errors.
  void emitLayerError(std::optional<mlir::Location> loc, llvm::StringRef name,
                      llvm::StringRef className, const llvm::Twine &message);
  bool hasFailed() const { return failed; }

  /// Ends the model with `outputs` and, when given, a `graph.training` op.
  /// `outputNames` (Keras' output layers) names them: a model of several
  /// outputs needs them to be trained. Null (with diagnostics emitted) if
  /// any error happened or the module does not verify.
  mlir::OwningOpRef<mlir::ModuleOp>
  finish(llvm::ArrayRef<Tensor> outputs,
         std::optional<Training> training = std::nullopt,
         llvm::ArrayRef<std::string> outputNames = {});

  /// A layer's identity and variables; opaque outside the builder.
  struct LayerContext;

private:
  std::string uniqueName(llvm::StringRef requested, llvm::StringRef base);
  /// The graph.compute_type of a layer under `policy`; null for float32.
  mlir::Type computeType(DTypePolicy policy);
  mlir::Location layerLoc(const LayerOptions &options, llvm::StringRef name);
  Layer
  makeLayer(llvm::StringRef className, llvm::StringRef defaultBase,
            const LayerOptions &options, size_t minInputs, size_t maxInputs,
            std::function<Tensor(LayerContext &, llvm::ArrayRef<Tensor>)> body);
  /// x * scale + offset: scalars (one-element lists) or per channel.
  mlir::Value scaleShift(mlir::Location loc, mlir::Value x,
                         llvm::ArrayRef<double> scales,
                         llvm::ArrayRef<double> offsets);
  /// A merge layer (Add, Multiply, ...): its inputs, broadcast to one shape
  /// as Keras does, combined by `combine` at the layer's location.
  Layer makeMergeLayer(llvm::StringRef className, llvm::StringRef defaultBase,
                       const LayerOptions &options, size_t maxInputs,
                       std::function<mlir::Value(mlir::Location, mlir::Type,
                                                 llvm::ArrayRef<mlir::Value>)>
                           combine);

  mlir::MLIRContext *context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::graph::ModelOp model;
  mlir::OpBuilder builder;
  int64_t batchSize;
  mlir::Location baseLoc;
  /// Every layer name in use, and the next default suffix per base name.
  std::set<std::string> takenNames;
  std::map<std::string, int> nextSuffix;
  bool failed = false;
};

} // namespace graph::builder

#endif // FRONTENDS_BUILDER_MODELBUILDER_H
