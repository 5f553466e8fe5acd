//===- GraphAttrs.td - graph dialect attributes ------------*- tablegen -*-===//

#ifndef GRAPH_ATTRS_TD
#define GRAPH_ATTRS_TD

include "dialects/graph/GraphDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Graph_Padding : I32EnumAttr<"Padding", "Keras padding mode", [
    I32EnumAttrCase<"valid", 0>, I32EnumAttrCase<"same", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}
def Graph_PaddingAttr : EnumAttr<Graph_Dialect, Graph_Padding, "padding">;

// How a convolution reads its kernel: Keras' HWIO [kh, kw, C / groups, F],
// or OHWI [F, kh, kw, C / groups] (cuDNN's KRSC), which
// graph-assign-filter-layout gives kernels that only convolutions read.
def Graph_FilterLayout : I32EnumAttr<"FilterLayout", "convolution kernel layout", [
    I32EnumAttrCase<"hwio", 0>, I32EnumAttrCase<"ohwi", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}
def Graph_FilterLayoutAttr
    : EnumAttr<Graph_Dialect, Graph_FilterLayout, "filter_layout">;

def Graph_InitKind : I32EnumAttr<"InitKind", "Keras weight initializer", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"random_normal", 3>,
    I32EnumAttrCase<"random_uniform", 4>,
    I32EnumAttrCase<"truncated_normal", 5>,
    I32EnumAttrCase<"glorot_uniform", 6>,
    I32EnumAttrCase<"glorot_normal", 7>,
    I32EnumAttrCase<"he_normal", 8>,
    I32EnumAttrCase<"he_uniform", 9>,
    I32EnumAttrCase<"lecun_normal", 10>,
    I32EnumAttrCase<"lecun_uniform", 11>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}

// The first two take class labels; the rest compare predictions with
// targets of their shape (graph.pointwise_loss): element by element, or
// row by row of the last axis (categorical_focal_crossentropy,
// cosine_similarity, categorical_hinge), or over the whole batch (dice,
// tversky: Keras' axis=None).
def Graph_LossKind : I32EnumAttr<"LossKind", "training loss", [
    I32EnumAttrCase<"categorical_crossentropy", 0>,
    I32EnumAttrCase<"sparse_categorical_crossentropy", 1>,
    I32EnumAttrCase<"binary_crossentropy", 2>,
    I32EnumAttrCase<"mean_squared_error", 3>,
    I32EnumAttrCase<"mean_absolute_error", 4>,
    I32EnumAttrCase<"mean_absolute_percentage_error", 5>,
    I32EnumAttrCase<"mean_squared_logarithmic_error", 6>,
    I32EnumAttrCase<"huber", 7>,
    I32EnumAttrCase<"log_cosh", 8>,
    I32EnumAttrCase<"poisson", 9>,
    I32EnumAttrCase<"kl_divergence", 10>,
    I32EnumAttrCase<"hinge", 11>,
    I32EnumAttrCase<"squared_hinge", 12>,
    // A metric, not a loss: (p > 0.5) == t, element by element.
    I32EnumAttrCase<"binary_accuracy", 13>,
    I32EnumAttrCase<"binary_focal_crossentropy", 14>,
    I32EnumAttrCase<"categorical_focal_crossentropy", 15>,
    I32EnumAttrCase<"cosine_similarity", 16>,
    I32EnumAttrCase<"categorical_hinge", 17>,
    I32EnumAttrCase<"dice", 18>,
    I32EnumAttrCase<"tversky", 19>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}
def Graph_LossKindAttr : EnumAttr<Graph_Dialect, Graph_LossKind, "loss">;

// Keras' compiled metrics (keras.metrics), as #graph.metric names them.
// `accuracy` is resolved as Keras' compile_utils.get_metric resolves it, by
// the output and its labels; the others are what they say. The means
// (accuracies, errors) are each step's weighted mean over its rows; the
// root mean and the confusion metrics (precision, recall, auc) are Keras'
// stateful metrics, whose epoch and evaluation values the runtime makes
// from the steps' outputs (plan.fbs, Metric).
def Graph_MetricKind : I32EnumAttr<"MetricKind", "Keras metric", [
    I32EnumAttrCase<"accuracy", 0>,
    I32EnumAttrCase<"binary_accuracy", 1>,
    I32EnumAttrCase<"categorical_accuracy", 2>,
    I32EnumAttrCase<"sparse_categorical_accuracy", 3>,
    I32EnumAttrCase<"top_k_categorical_accuracy", 4>,
    I32EnumAttrCase<"sparse_top_k_categorical_accuracy", 5>,
    I32EnumAttrCase<"mean_absolute_error", 6>,
    I32EnumAttrCase<"mean_squared_error", 7>,
    I32EnumAttrCase<"mean_absolute_percentage_error", 8>,
    I32EnumAttrCase<"mean_squared_logarithmic_error", 9>,
    I32EnumAttrCase<"root_mean_squared_error", 10>,
    I32EnumAttrCase<"precision", 11>,
    I32EnumAttrCase<"recall", 12>,
    I32EnumAttrCase<"auc", 13>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}

// keras.metrics.AUC's curve and summation_method.
def Graph_AucCurve : I32EnumAttr<"AucCurve", "AUC curve", [
    I32EnumAttrCase<"roc", 0>, I32EnumAttrCase<"pr", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}
def Graph_AucSummation : I32EnumAttr<"AucSummation", "AUC summation method", [
    I32EnumAttrCase<"interpolation", 0>, I32EnumAttrCase<"minoring", 1>,
    I32EnumAttrCase<"majoring", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::graph";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Graph_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Graph_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A double printed in its shortest exact form, always with a '.' so MLIR's
// lexer reads it back as a float. Required: optimizer attributes print every
// hyper-parameter so a test file shows exactly what trains.
class Graph_F64Param<string desc = "">
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = "::mlir::graph::parseF64($_parser)";
  let printer = "::mlir::graph::printF64($_printer, $_self)";
}

// An optional double, 0 when absent and not printed when 0: the options
// every Keras optimizer takes (gradient clipping, weight decay), off unless
// set, so that IR without them reads as before.
class Graph_OptF64Param<string desc = ""> : Graph_F64Param<desc> {
  let defaultValue = "::llvm::APFloat(0.0)";
}

// The options every Keras 3 optimizer takes (base_optimizer.py), in the
// order Keras applies them: the gradients are clipped (per variable by
// `clipnorm`, together by `global_clipnorm`, or elementwise by `clipvalue`:
// at most one of them), then `weight_decay` shrinks each variable by
// `var * weight_decay * learning_rate`, then the update runs.
// `schedule`, when set, makes the learning rate a function of the step
// counter (Keras' `iterations`, 0 on the first update) that the update
// kernel evaluates every step; `learning_rate` is then the schedule's
// initial_learning_rate.
// `gradient_accumulation_steps` N (0: off, else >= 2): the update adds each
// step's gradient to the slot `grad_accum` and, every N-th step, applies
// the mean of the N gradients (then clipped, with weight decay) and resets
// it; the other steps leave the variables and the other slots alone. The
// bias corrections count applied updates (Keras' `iterations` is the step
// count floor-divided by N); the schedule reads the raw step count, as
// Keras' `_get_current_learning_rate` reads `_iterations`.
defvar Graph_OptimizerCommonParams = (ins
    Graph_OptF64Param<>:$clipnorm,
    Graph_OptF64Param<>:$global_clipnorm,
    Graph_OptF64Param<>:$clipvalue,
    Graph_OptF64Param<>:$weight_decay,
    OptionalParameter<"::mlir::Attribute">:$schedule,
    DefaultValuedParameter<"int64_t", "0">:$gradient_accumulation_steps);

class Graph_BoolParam<string desc = ""> : AttrOrTypeParameter<"bool", desc> {
  let parser = "::mlir::graph::parseBool($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

// A bool that is false unless printed.
class Graph_OptBoolParam<string desc = ""> : Graph_BoolParam<desc> {
  let defaultValue = "false";
}

// A double with a default, printed only when it differs from it.
class Graph_DefaultF64Param<string value, string desc = "">
    : Graph_F64Param<desc> {
  let defaultValue = "::llvm::APFloat(" # value # ")";
}

// A double that may be absent (a Keras option left at its default, which
// the kernels know).
class Graph_MaybeF64Param<string desc = "">
    : OptionalParameter<"std::optional<::llvm::APFloat>", desc> {
  let comparator = "::mlir::graph::sameF64($_lhs, $_rhs)";
  let parser = "::mlir::graph::parseMaybeF64($_parser)";
  let printer = "::mlir::graph::printF64($_printer, *$_self)";
}

// An integer that may be absent.
class Graph_MaybeI64Param<string desc = "">
    : OptionalParameter<"std::optional<int64_t>", desc> {
  let printer = "$_printer << *$_self";
}

// A list of axes, `[1, 2]`; empty when absent.
class Graph_AxesParam<string desc = "">
    : OptionalArrayRefParameter<"int64_t", desc> {
  let parser = "::mlir::graph::parseI64List($_parser)";
  let printer = "::mlir::graph::printI64List($_printer, $_self)";
}

class Graph_EnumParam<EnumAttrInfo info, string value>
    : EnumParameter<info> {
  let defaultValue = info.cppNamespace # "::" # info.className # "::" # value;
}

def Graph_MetricAttr : Graph_Attr<"Metric", "metric"> {
  let summary = "one of Keras' compiled metrics and its options";
  let description = [{
    ```mlir
    #graph.metric<kind = accuracy, name = "accuracy">
    #graph.metric<kind = sparse_top_k_categorical_accuracy, name = "top2", k = 2>
    #graph.metric<kind = auc, name = "pr_auc", curve = pr>
    #graph.metric<kind = precision, name = "precision", threshold = 0.3>
    ```
    `name` is the name Keras logs the metric under (for a model of several
    outputs, after the output's name: `<output>_<name>`). `k`: the top-k
    accuracies' (5 in Keras), and Precision's and Recall's `top_k` (0:
    off). `threshold`: binary accuracy's and Precision's and Recall's (one
    threshold, as it applies: 0.5 by default; Keras' -1e10, exactly the
    top k, for a Precision or Recall with `top_k` and no `thresholds`);
    `class_id` (-1: off) restricts Precision
    and Recall to one class. AUC: `num_thresholds` (200), `curve` and
    `summation` (Keras' summation_method), `from_logits`.
  }];
  let parameters = (ins
    EnumParameter<Graph_MetricKind>:$kind,
    StringRefParameter<"the name Keras logs">:$name,
    DefaultValuedParameter<"int64_t", "0">:$k,
    Graph_DefaultF64Param<"0.5">:$threshold,
    DefaultValuedParameter<"int64_t", "-1">:$class_id,
    DefaultValuedParameter<"int64_t", "200">:$num_thresholds,
    Graph_EnumParam<Graph_AucCurve, "roc">:$curve,
    Graph_EnumParam<Graph_AucSummation, "interpolation">:$summation,
    Graph_OptBoolParam<>:$from_logits
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the runtime makes the value from counts the steps output
    /// (precision, recall, auc), not from a mean.
    bool isConfusionMetric() const;
  }];
}

def Graph_OutputLossAttr : Graph_Attr<"OutputLoss", "output_loss"> {
  let summary = "one model output's loss, its weight and its metrics";
  let description = [{
    ```mlir
    #graph.output_loss<kind = sparse_categorical_crossentropy, from_logits = true,
                metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>
    #graph.output_loss<kind = mean_squared_error, weight = 0.5>
    ```
    What Keras' compile() gives one output: its loss (`kind`, with the
    loss object's options), its entry of `loss_weights` (`weight`, 1 by
    default) and its metrics. The options are as graph.pointwise_loss
    takes them: `from_logits`; `label_smoothing` (categorical and binary
    cross-entropies, focal ones); `delta` (huber); `alpha`, `gamma`,
    `apply_class_balancing` (focal cross-entropies), `alpha`, `beta`
    (tversky); `ignore_class` (sparse_categorical_crossentropy: rows of
    that label weigh 0, and the loss is divided by the rows kept); `axis`
    (dice, tversky: the axes one ratio is taken over; absent, Keras'
    axis=None, the whole batch); `sum_reduction` (Keras' reduction="sum",
    else sum_over_batch_size).
  }];
  let parameters = (ins
    EnumParameter<Graph_LossKind>:$kind,
    Graph_DefaultF64Param<"1.0">:$weight,
    Graph_OptBoolParam<>:$from_logits,
    Graph_MaybeF64Param<>:$label_smoothing,
    Graph_MaybeF64Param<>:$delta,
    Graph_MaybeF64Param<>:$alpha,
    Graph_MaybeF64Param<>:$beta,
    Graph_MaybeF64Param<>:$gamma,
    Graph_OptBoolParam<>:$apply_class_balancing,
    Graph_MaybeI64Param<>:$ignore_class,
    Graph_AxesParam<>:$axis,
    Graph_OptBoolParam<>:$sum_reduction,
    OptionalParameter<"::mlir::ArrayAttr">:$metrics
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The metrics, as #graph.metric attributes (none when absent).
    ::llvm::SmallVector<MetricAttr> getMetricList() const;
  }];
}

def Graph_InitializerAttr : Graph_Attr<"Initializer", "init"> {
  let summary = "how a variable's initial value is drawn";
  let description = [{
    Keras initializers with their parameters. Only the parameters that the
    kind takes are printed and parsed:

    ```mlir
    #graph.init<glorot_uniform>
    #graph.init<random_normal, mean = 0.0, stddev = 0.05, seed = 7>
    #graph.init<constant, value = 0.1>
    ```

    Values are drawn by the runtime's counter-based generator keyed by the
    variable's name, so every backend and replica count starts alike; `seed`,
    when present, is mixed into that key.
  }];
  let parameters = (ins
    "::mlir::graph::InitKind":$kind,
    Graph_F64Param<>:$mean,
    Graph_F64Param<>:$stddev,
    Graph_F64Param<>:$minval,
    Graph_F64Param<>:$maxval,
    Graph_F64Param<>:$value,
    OptionalParameter<"std::optional<int64_t>">:$seed
  );
  let builders = [
    AttrBuilder<(ins "::mlir::graph::InitKind":$kind), [{
      using ::llvm::APFloat;
      return $_get($_ctxt, kind, APFloat(0.0), APFloat(0.05), APFloat(-0.05),
                   APFloat(0.05), APFloat(0.0), std::nullopt);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The parameter names that `kind` takes, in printing order.
    static ::llvm::ArrayRef<::llvm::StringRef> parameterNames(InitKind kind);
  }];
}

def Graph_SGDAttr : Graph_Attr<"SGD", "sgd"> {
  let summary = "stochastic gradient descent with optional (Nesterov) momentum";
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$momentum,
    Graph_BoolParam<>:$nesterov
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_AdamAttr : Graph_Attr<"Adam", "adam"> {
  let summary = "Adam with bias correction, epsilon added as Keras adds it";
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$beta_1,
    Graph_F64Param<>:$beta_2,
    Graph_F64Param<>:$epsilon,
    Graph_BoolParam<>:$amsgrad
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_RMSpropAttr : Graph_Attr<"RMSprop", "rmsprop"> {
  let summary = "RMSprop with optional momentum and centering";
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$rho,
    Graph_F64Param<>:$momentum,
    Graph_F64Param<>:$epsilon,
    Graph_BoolParam<>:$centered
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_AdagradAttr : Graph_Attr<"Adagrad", "adagrad"> {
  let summary = "Adagrad: a sum of squared gradients, from a positive start";
  let description = [{
    Keras 3's keras/src/optimizers/adagrad.py: the slot `accumulator`
    starts at `initial_accumulator_value`, then `acc += g^2` and
    `w -= lr * g / sqrt(acc + epsilon)`.
  }];
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$initial_accumulator_value,
    Graph_F64Param<>:$epsilon
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_AdamaxAttr : Graph_Attr<"Adamax", "adamax"> {
  let summary = "Adamax: Adam with the infinity norm for the second moment";
  let description = [{
    Keras 3's keras/src/optimizers/adamax.py (slots `m`, `u`):
    `m += (g - m) * (1 - beta_1)`, `u = max(beta_2 * u, |g|)`,
    `w -= lr * m / ((1 - beta_1^t) * (u + epsilon))`.
  }];
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$beta_1,
    Graph_F64Param<>:$beta_2,
    Graph_F64Param<>:$epsilon
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_NadamAttr : Graph_Attr<"Nadam", "nadam"> {
  let summary = "Nadam: Adam with Nesterov momentum and a momentum schedule";
  let description = [{
    Keras 3's keras/src/optimizers/nadam.py (slots `m`, `v`). Keras' scalar
    `u_product`, the product of the momentum cache
    `beta_1 * (1 - 0.5 * 0.96^i)` over i = 1..t, is a function of the step
    counter: the kernels compute it from the step, so it is saved and
    restored with the step (no slot).
  }];
  let parameters = !con((ins
    Graph_F64Param<>:$learning_rate,
    Graph_F64Param<>:$beta_1,
    Graph_F64Param<>:$beta_2,
    Graph_F64Param<>:$epsilon
  ), Graph_OptimizerCommonParams);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Learning-rate schedules (keras.optimizers.schedules), the `schedule` of an
// optimizer: the initial rate is the optimizer's learning_rate.
//===----------------------------------------------------------------------===//

def Graph_ExponentialDecayAttr
    : Graph_Attr<"ExponentialDecay", "exponential_decay"> {
  let summary = "lr * decay_rate ^ (step / decay_steps), floored if staircase";
  let parameters = (ins Graph_F64Param<>:$decay_steps,
                        Graph_F64Param<>:$decay_rate,
                        Graph_BoolParam<>:$staircase);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_InverseTimeDecayAttr
    : Graph_Attr<"InverseTimeDecay", "inverse_time_decay"> {
  let summary = "lr / (1 + decay_rate * step / decay_steps)";
  let parameters = (ins Graph_F64Param<>:$decay_steps,
                        Graph_F64Param<>:$decay_rate,
                        Graph_BoolParam<>:$staircase);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_PolynomialDecayAttr
    : Graph_Attr<"PolynomialDecay", "polynomial_decay"> {
  let summary = "(lr - end) * (1 - step / decay_steps) ^ power + end";
  let parameters = (ins Graph_F64Param<>:$decay_steps,
                        Graph_F64Param<>:$end_learning_rate,
                        Graph_F64Param<>:$power,
                        Graph_BoolParam<>:$cycle);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_CosineDecayAttr : Graph_Attr<"CosineDecay", "cosine_decay"> {
  let summary = "cosine decay to alpha * lr, after an optional linear warm-up";
  let description = [{
    With `warmup_steps` > 0 the rate first rises linearly from the
    optimizer's learning_rate to `warmup_target`, then decays from it.
  }];
  let parameters = (ins Graph_F64Param<>:$decay_steps,
                        Graph_OptF64Param<>:$alpha,
                        Graph_OptF64Param<>:$warmup_target,
                        Graph_OptF64Param<>:$warmup_steps);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_CosineDecayRestartsAttr
    : Graph_Attr<"CosineDecayRestarts", "cosine_decay_restarts"> {
  let summary = "SGDR: cosine decays restarting every t_mul-longer period";
  let description = [{
    Keras' CosineDecayRestarts: the first period lasts `first_decay_steps`,
    each next one `t_mul` times longer and starting `m_mul` times lower;
    each decays to `alpha` times its start.
  }];
  let parameters = (ins Graph_F64Param<>:$first_decay_steps,
                        Graph_F64Param<>:$t_mul,
                        Graph_F64Param<>:$m_mul,
                        Graph_OptF64Param<>:$alpha);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_PiecewiseConstantDecayAttr
    : Graph_Attr<"PiecewiseConstantDecay", "piecewise_constant_decay"> {
  let summary = "values[i] while boundaries[i-1] < step <= boundaries[i]";
  let parameters = (ins "::mlir::DenseF64ArrayAttr":$boundaries,
                        "::mlir::DenseF64ArrayAttr":$values);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // GRAPH_ATTRS_TD
