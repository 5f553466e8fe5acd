// RUN: graph-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the graph dialect, one case each: the attribute parsers
// and verifiers, the ODS constraints, the op verifiers, the shape inference
// that doubles as verification, and the symbol checks.
//
// Two messages of the shape inference cannot be reached from IR text, because
// the ODS constraints reject the same input first: "expects <operand> to be a
// statically shaped tensor" (see @dynamic below) and "expects <pair> to have 2
// values" (see the strides = [1, 1, 1] case). Only C++ builders reach them.

//===----------------------------------------------------------------------===//
// #graph.init
//===----------------------------------------------------------------------===//

// expected-error@+1 {{unknown initializer 'xavier'}}
graph.variable @v : tensor<3xf32> = #graph.init<xavier>

// -----

// expected-error@+1 {{'mean' is not a parameter of initializer 'constant'}}
graph.variable @v : tensor<3xf32> = #graph.init<constant, mean = 1.0>

// -----

// zeros and ones take no parameter at all, not even a seed.
// expected-error@+1 {{'seed' is not a parameter of initializer 'zeros'}}
graph.variable @v : tensor<3xf32> = #graph.init<zeros, seed = 1>

// -----

// Parameters are named.
// expected-error@+1 {{expected valid keyword}}
graph.variable @v : tensor<3xf32> = #graph.init<constant, 1.0>

// -----

// A parameter is a float literal, with a '.'.
// expected-error@+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note@+1 {{add a trailing dot to make the literal a float}}
graph.variable @v : tensor<3xf32> = #graph.init<constant, value = 1>

// -----

// 1.0e400 overflows a double to +inf.
// expected-error@+1 {{initializer parameters must be finite}}
graph.variable @v : tensor<3xf32> = #graph.init<constant, value = 1.0e400>

// -----

// NaN, spelled as its bit pattern (MLIR has no NaN literal).
// expected-error@+1 {{initializer parameters must be finite}}
graph.variable @v : tensor<3xf32> = #graph.init<random_uniform, minval = 0x7FF8000000000000, maxval = 1.0>

// -----

// expected-error@+1 {{initializer 'random_normal' needs stddev > 0, got 0}}
graph.variable @v : tensor<3xf32> = #graph.init<random_normal, stddev = 0.0>

// -----

// expected-error@+1 {{initializer 'truncated_normal' needs stddev > 0, got -1}}
graph.variable @v : tensor<3xf32> = #graph.init<truncated_normal, mean = 0.0, stddev = -1.0>

// -----

// expected-error@+1 {{initializer 'random_uniform' needs minval < maxval, got [1, 1]}}
graph.variable @v : tensor<3xf32> = #graph.init<random_uniform, minval = 1.0, maxval = 1.0>

// -----

//===----------------------------------------------------------------------===//
// Optimizers. Parsing fails at the attribute, so no model is needed.
//===----------------------------------------------------------------------===//

// expected-error@+1 {{sgd needs a finite learning_rate >= 0, got nan}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0x7FF8000000000000, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// 1.0e400 overflows to +inf, which is not a usable learning rate.
// expected-error@+1 {{adam needs a finite learning_rate >= 0, got inf}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 1.0e400, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 2

// -----

// expected-error@+1 {{rmsprop needs a finite learning_rate >= 0, got -0.001}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.rmsprop<learning_rate = -0.001, rho = 0.9, momentum = 0.0, epsilon = 1.0e-07, centered = false> global_batch_size = 2

// -----

// expected-error@+1 {{sgd needs momentum in [0, 1), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 1.0, nesterov = false> global_batch_size = 2

// -----

// expected-error@+1 {{sgd with nesterov needs momentum > 0}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = true> global_batch_size = 2

// -----

// expected-error@+1 {{adam needs beta_1 in [0, 1), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 1.0, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 2

// -----

// expected-error@+1 {{adam needs beta_2 in [0, 1), got -0.1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = -0.1, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 2

// -----

// expected-error@+1 {{adam needs a finite epsilon > 0, got 0}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 0.0, amsgrad = false> global_batch_size = 2

// -----

// expected-error@+1 {{rmsprop needs rho in [0, 1), got 1.5}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 1.5, momentum = 0.0, epsilon = 1.0e-07, centered = false> global_batch_size = 2

// -----

// expected-error@+1 {{rmsprop needs momentum in [0, 1), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 1.0, epsilon = 1.0e-07, centered = false> global_batch_size = 2

// -----

// expected-error@+1 {{rmsprop needs a finite epsilon > 0, got -1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = -1.0, centered = false> global_batch_size = 2

// -----

// Clipping and weight decay: off (0) or positive, and one kind of clipping.
// expected-error@+1 {{sgd needs a finite clipnorm >= 0 (0: off), got -1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false, clipnorm = -1.0> global_batch_size = 2

// -----

// expected-error@+1 {{adam needs a finite weight_decay >= 0 (0: off), got inf}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false, weight_decay = 1.0e400> global_batch_size = 2

// -----

// expected-error@+1 {{rmsprop takes at most one of clipnorm, global_clipnorm and clipvalue}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = 1.0e-07, centered = false, global_clipnorm = 1.0, clipvalue = 0.5> global_batch_size = 2

// -----

// Learning-rate schedules.
// expected-error@+1 {{sgd's schedule needs a finite decay_steps > 0, got 0}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false, schedule = #graph.cosine_decay<decay_steps = 0.0>> global_batch_size = 2

// -----

// expected-error@+1 {{sgd's piecewise_constant_decay needs 1 to 16 boundaries and one value more, got 2 and 2}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false, schedule = #graph.piecewise_constant_decay<boundaries = [1.0, 2.0], values = [0.1, 0.01]>> global_batch_size = 2

// -----

// expected-error@+1 {{adam has an unknown schedule #graph.init<zeros>}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false, schedule = #graph.init<zeros>> global_batch_size = 2

// -----

// Clipping by norm needs one norm per variable.
func.func @clip_without_norms(%w: tensor<3xf32>, %g: tensor<3xf32>) {
  // expected-error@+1 {{clips by norm and needs one norm per variable (1), got 0}}
  %p = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false, clipnorm = 1.0> params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) slots() -> (tensor<3xf32>)
  return
}

// -----

func.func @norms_without_clip(%w: tensor<3xf32>, %g: tensor<3xf32>, %n: tensor<f32>) {
  // expected-error@+1 {{takes norms only with clipnorm or global_clipnorm}}
  %p = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false, clipvalue = 1.0> params(%w : tensor<3xf32>) grads(%g : tensor<3xf32>) slots() norms(%n : tensor<f32>) -> (tensor<3xf32>)
  return
}

// -----

// expected-error@+2 {{expected 'true' or 'false'}}
// expected-error@+1 {{failed to parse Graph_SGDAttr parameter 'nesterov' which is to be a `bool`}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = 1> global_batch_size = 2

// -----

// Every optimizer parameter is required (clipping and weight decay are
// optional, 0 when absent).
// expected-error@+1 {{struct is missing required parameter: momentum}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01> global_batch_size = 2

// -----

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// expected-error@+2 {{expected ::mlir::graph::LossKind to be one of: categorical_crossentropy, sparse_categorical_crossentropy, binary_crossentropy, mean_squared_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_logarithmic_error, huber, log_cosh, poisson, kl_divergence, hinge, squared_hinge, binary_accuracy, binary_focal_crossentropy, categorical_focal_crossentropy, cosine_similarity, categorical_hinge, dice, tversky}}
// expected-error@+1 {{failed to parse Graph_OutputLossAttr parameter 'kind' which is to be a `::mlir::graph::LossKind`}}
graph.training @m losses = [#graph.output_loss<kind = ctc>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x3x1xf32>
  %k = graph.input "k" : tensor<3x3x1x1xf32>
  // expected-error@+2 {{expected ::mlir::graph::Padding to be one of: valid, same}}
  // expected-error@+1 {{failed to parse Graph_PaddingAttr parameter 'value'}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = causal dilations = [1, 1] : (tensor<2x3x3x1xf32>, tensor<3x3x1x1xf32>) -> tensor<2x1x1x1xf32>
  graph.output %y : tensor<2x1x1x1xf32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.variable and graph.read_variable
//===----------------------------------------------------------------------===//

// expected-error@+1 {{'graph.variable' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of floats}}
graph.variable @v : tensor<?xf32> = #graph.init<zeros>

// -----

// expected-error@+1 {{'graph.variable' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of floats}}
graph.variable @v : tensor<3xi32> = #graph.init<zeros>

// -----

// expected-error@+1 {{'graph.variable' op attribute 'trainable' failed to satisfy constraint: bool attribute}}
graph.variable @v : tensor<3xf32> = #graph.init<zeros> {trainable = "no"}

// -----

// expected-note@+1 {{see existing symbol definition here}}
graph.variable @v : tensor<3xf32> = #graph.init<zeros>
// expected-error@+1 {{redefinition of symbol named 'v'}}
graph.variable @v : tensor<3xf32> = #graph.init<ones>

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.variable' op expects parent op 'builtin.module'}}
  graph.variable @v : tensor<3xf32> = #graph.init<zeros>
  graph.output %x : tensor<2x3xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.read_variable' op 'missing' does not name a graph.variable}}
  %w = graph.read_variable @missing : tensor<3xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

// A model is a symbol, but not a variable.
graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.read_variable' op 'm' does not name a graph.variable}}
  %w = graph.read_variable @m : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

graph.variable @"dense/kernel" : tensor<3x4xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.read_variable' op result type 'tensor<4x3xf32>' does not match variable @"dense/kernel" of type 'tensor<3x4xf32>'}}
  %w = graph.read_variable @"dense/kernel" : tensor<4x3xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.read_variable' op result #0 must be statically shaped tensor of floats, but got 'tensor<?xf32>'}}
  %w = graph.read_variable @v : tensor<?xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.model, graph.input, graph.output
//===----------------------------------------------------------------------===//

// expected-error@+1 {{'graph.model' op takes its inputs from graph.input ops, not block arguments}}
"graph.model"() <{sym_name = "m"}> ({
^bb0(%a: tensor<2x3xf32>):
  "graph.output"(%a) : (tensor<2x3xf32>) -> ()
}) : () -> ()

// -----

// expected-error@+1 {{'graph.model' op must end with graph.output}}
graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  %y = graph.relu %x : tensor<2x3xf32>
}

// -----

// expected-error@+1 {{'graph.model' op expects a non-empty block}}
graph.model @m {
}

// -----

// expected-error@+1 {{'graph.model' op expects region #0 to have 0 or 1 blocks}}
"graph.model"() <{sym_name = "m"}> ({
  %x = "graph.input"() <{name = "x"}> : () -> tensor<2x3xf32>
  "graph.output"(%x) : (tensor<2x3xf32>) -> ()
^bb1:
  "graph.output"(%x) : (tensor<2x3xf32>) -> ()
}) : () -> ()

// -----

// expected-error@+1 {{'graph.model' op must return at least one value}}
graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.input' op duplicate input name 'x'}}
  %y = graph.input "x" : tensor<2x5xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

graph.model @m {
  // expected-error@+1 {{'graph.input' op needs a leading batch dimension}}
  %x = graph.input "x" : tensor<f32>
  graph.output %x : tensor<f32>
}

// -----

graph.model @m {
  // expected-error@+1 {{'graph.input' op needs a non-empty name}}
  %x = graph.input "" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}

// -----

graph.model @m {
  // expected-error@+1 {{'graph.input' op result #0 must be statically shaped tensor of floats or integers, but got 'tensor<?x3xf32>'}}
  %x = graph.input "x" : tensor<?x3xf32>
  graph.output %x : tensor<?x3xf32>
}

// -----

// expected-error@+1 {{'graph.input' op expects parent op 'graph.model'}}
%x = graph.input "x" : tensor<2x3xf32>

// -----

// expected-error@+1 {{'graph.output' op expects parent op 'graph.model'}}
graph.output

// -----

//===----------------------------------------------------------------------===//
// graph.training
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+2 {{metric auc needs num_thresholds >= 2, got 1}}
// expected-error@+1 {{failed to parse Graph_OutputLossAttr parameter 'metrics' which is to be a `::mlir::ArrayAttr`}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = auc, name = "auc", num_thresholds = 1>]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+2 {{k is the top-k accuracies', precision's and recall's, not accuracy's}}
// expected-error@+1 {{failed to parse Graph_OutputLossAttr parameter 'metrics' which is to be a `::mlir::ArrayAttr`}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy", k = 3>]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+2 {{threshold is binary_accuracy's, precision's and recall's, not auc's}}
// expected-error@+1 {{failed to parse Graph_OutputLossAttr parameter 'metrics' which is to be a `::mlir::ArrayAttr`}}
graph.training @m losses = [#graph.output_loss<kind = binary_crossentropy, metrics = [#graph.metric<kind = auc, name = "auc", threshold = 0.3>]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{metric 'top2' takes class indices; loss categorical_crossentropy takes labels of the predictions' shape}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = sparse_top_k_categorical_accuracy, name = "top2", k = 2>]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{ignore_class is sparse_categorical_crossentropy's, not categorical_crossentropy's}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, ignore_class = -1>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{axis is dice's and tversky's, not mean_squared_error's}}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error, axis = [1]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op loss dice: axis 2 is outside the output's 2 axes}}
graph.training @m losses = [#graph.output_loss<kind = dice, axis = [2]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x4xf32>
  graph.output %x : tensor<2x3x4xf32>
}
// expected-error@+1 {{'graph.training' op metric 'accuracy' needs model output [batch, classes], got 'tensor<2x3x4xf32>'}}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x1xf32>
  graph.output %x : tensor<2x3x1xf32>
}
// A last axis of 1 under a loss of targets: binary accuracy, at any rank.
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = precision, name = "p", k = 1>]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{two metrics are named 'accuracy'}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = categorical_accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{metric 'mae' compares predictions with labels of their shape; loss sparse_categorical_crossentropy takes class indices}}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = mean_absolute_error, name = "mae">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{delta is huber's, not mean_squared_error's}}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error, delta = 2.0>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{binary_accuracy is a metric, not a loss}}
graph.training @m losses = [#graph.output_loss<kind = binary_accuracy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

func.func @pointwise_targets(%p: tensor<4x3xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
  // expected-error@+2 {{targets 'tensor<4x2xf32>' must have the predictions' type 'tensor<4x3xf32>'}}
  // expected-error@+1 {{'graph.pointwise_loss' op failed to infer returned types}}
  %l = graph.pointwise_loss mean_squared_error %p, %t : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @pointwise_class_loss(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error@+2 {{categorical_crossentropy takes class labels, not element-wise targets}}
  // expected-error@+1 {{'graph.pointwise_loss' op failed to infer returned types}}
  %l = graph.pointwise_loss categorical_crossentropy %p, %t : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @pointwise_grad_metric(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{binary_accuracy is a metric: it has no gradient}}
  %g = graph.pointwise_loss_grad binary_accuracy %p, %t : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @pointwise_logits_of_hinge(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{from_logits is binary_crossentropy's and the focal cross-entropies', not categorical_hinge's}}
  %g = graph.pointwise_loss_grad categorical_hinge %p, %t from_logits : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @pointwise_alpha_of_mse(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{alpha is the focal cross-entropies' and tversky's, not mean_squared_error's}}
  %g = graph.pointwise_loss_grad mean_squared_error %p, %t alpha = 0.5 : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @focal_negative_gamma(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{needs a finite non-negative gamma, got -1}}
  %g = graph.pointwise_loss_grad binary_focal_crossentropy %p, %t gamma = -1.0 : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @categorical_focal_balancing(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{apply_class_balancing is binary_focal_crossentropy's, not categorical_focal_crossentropy's}}
  %g = graph.pointwise_loss_grad categorical_focal_crossentropy %p, %t apply_class_balancing : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @pointwise_dice(%p: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{dice is one ratio over the whole batch: graph.overlap_sums and graph.overlap_loss}}
  %g = graph.pointwise_loss_grad dice %p, %t : tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @overlap_kind(%s: tensor<5xf32>) -> tensor<f32> {
  // expected-error@+2 {{needs dice or tversky, got huber}}
  // expected-error@+1 {{'graph.overlap_loss' op failed to infer returned types}}
  %l = graph.overlap_loss huber %s : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @overlap_dice_beta(%s: tensor<5xf32>) -> tensor<f32> {
  // expected-error@+2 {{beta is tversky's, not dice's}}
  // expected-error@+1 {{'graph.overlap_loss' op failed to infer returned types}}
  %l = graph.overlap_loss dice %s beta = 0.5 : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @overlap_sums_type(%t: tensor<4x3xf32>, %s: tensor<2xf32>) -> tensor<4x3xf32> {
  // expected-error@+2 {{sums must be 'tensor<5xf32>' (sum t p, sum t, sum p, sum w, rows), got 'tensor<2xf32>'}}
  // expected-error@+1 {{'graph.overlap_loss_grad' op failed to infer returned types}}
  %g = graph.overlap_loss_grad dice %t, %s : tensor<4x3xf32>, tensor<2xf32> -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @overlap_replicas(%t: tensor<4x3xf32>, %s: tensor<5xf32>) -> tensor<4x3xf32> {
  // expected-error@+2 {{needs replicas >= 1, got 0}}
  // expected-error@+1 {{'graph.overlap_loss_grad' op failed to infer returned types}}
  %g = graph.overlap_loss_grad dice %t, %s {replicas = 0} : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

func.func @overlap_sums_targets(%p: tensor<4x3xf32>, %t: tensor<4x2xf32>) -> tensor<5xf32> {
  // expected-error@+2 {{targets 'tensor<4x2xf32>' must have the predictions' type 'tensor<4x3xf32>'}}
  // expected-error@+1 {{'graph.overlap_sums' op failed to infer returned types}}
  %s = graph.overlap_sums %p, %t : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<5xf32>
  return %s : tensor<5xf32>
}

// -----

// expected-error@+1 {{'graph.training' op 'cnn' does not name a graph.model}}
graph.training @cnn losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// A variable is a symbol, but not a model.
graph.variable @v : tensor<2x3xf32> = #graph.init<zeros>
// expected-error@+1 {{'graph.training' op 'v' does not name a graph.model}}
graph.training @v losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  %y = graph.relu %x : tensor<2x3xf32>
  graph.output %x, %y : tensor<2x3xf32>, tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op has 1 losses for a model of 2 outputs: one loss per output}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  %y = graph.relu %x : tensor<2x3xf32>
  graph.output %x, %y : tensor<2x3xf32>, tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op needs the names of the model's 2 outputs (graph.output's names): the logs and the data name each output}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>, #graph.output_loss<kind = mean_squared_error>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x4xf32>
  graph.output %x : tensor<2x3x4xf32>
}
// expected-error@+1 {{'graph.training' op loss categorical_crossentropy needs float model output [batch, classes], got 'tensor<2x3x4xf32>'}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xi32>
  graph.output %x : tensor<2x3xi32>
}
// expected-error@+1 {{'graph.training' op loss sparse_categorical_crossentropy needs float model output [batch, classes], got 'tensor<2x3xi32>'}}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "image" : tensor<32x10xf32>
  graph.output %x : tensor<32x10xf32>
}
// expected-error@+1 {{'graph.training' op global_batch_size 64 does not match the batch dimension 32 of input 'image'}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 64

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op attribute 'global_batch_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 0

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op attribute 'optimizer' failed to satisfy constraint: stochastic gradient descent with optional (Nesterov) momentum or Adam with bias correction, epsilon added as Keras adds it or RMSprop with optional momentum and centering}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = "adam" global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  graph.output %x : tensor<2x3xf32>
}
// expected-error@+1 {{'graph.training' op attribute 'losses' failed to satisfy constraint: one #graph.output_loss per output}}
graph.training @m losses = ["mse"] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3xf32>
  // expected-error@+1 {{'graph.training' op expects parent op 'builtin.module'}}
  graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2
  graph.output %x : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.conv2d
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{expects input of rank 4 (NHWC), got rank 3}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<9x4xf32>
  // expected-error@+2 {{expects kernel of rank 4 (HWIO), got rank 2}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<9x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+1 {{'graph.conv2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements}}
  %y = graph.conv2d %x, %k strides = [1, 1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{expects strides >= 1, got [0, 1]}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [0, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{expects dilations >= 1, got [1, -2]}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, -2] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{strides > 1 cannot be combined with dilations > 1 (as in Keras)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [2, 1] padding = valid dilations = [1, 2] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x3x4x4xf32>
  graph.output %y : tensor<2x3x4x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf16>
  // expected-error@+2 {{input element type 'f32' differs from kernel element type 'f16'}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf16>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x3xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{kernel input channels (1) must match input channels (3)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x3xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x8x1xf32>
  %k = graph.input "k" : tensor<5x5x1x4xf32>
  // expected-error@+2 {{kernel 5x5 does not fit input 3x8 with padding valid}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x3x8x1xf32>, tensor<5x5x1x4xf32>) -> tensor<2x1x4x4xf32>
  graph.output %y : tensor<2x1x4x4xf32>
}

// -----

// The declared result type must be the inferred one: valid padding shrinks.
graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  // expected-error@+2 {{'graph.conv2d' op inferred type(s) 'tensor<2x6x6x4xf32>' are incompatible with return type(s) of operation 'tensor<2x8x8x4xf32>'}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x8x8x4xf32>
  graph.output %y : tensor<2x8x8x4xf32>
}

// -----

// Layer ops are not tied to graph.model; a function can hand them a dynamic
// shape, which the ODS constraint rejects before shape inference runs.
func.func @dynamic(%x: tensor<2x?x8x1xf32>, %k: tensor<3x3x1x4xf32>) {
  // expected-error@+1 {{'graph.conv2d' op operand #0 must be statically shaped tensor of floats, but got 'tensor<2x?x8x1xf32>'}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x?x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  return
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xi32>
  %k = graph.input "k" : tensor<3x3x1x4xi32>
  // expected-error@+1 {{'graph.conv2d' op operand #0 must be statically shaped tensor of floats, but got 'tensor<2x8x8x1xi32>'}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xi32>, tensor<3x3x1x4xi32>) -> tensor<2x6x6x4xi32>
  graph.output %x : tensor<2x8x8x1xi32>
}

// -----

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8xf32>
  // expected-error@+2 {{expects input of rank 4 (NHWC), got rank 3}}
  // expected-error@+1 {{'graph.max_pool2d' op failed to infer returned types}}
  %y = graph.max_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x8x8xf32> -> tensor<2x4x4xf32>
  graph.output %y : tensor<2x4x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  // expected-error@+2 {{expects pool_size >= 1, got [2, 0]}}
  // expected-error@+1 {{'graph.avg_pool2d' op failed to infer returned types}}
  %y = graph.avg_pool2d %x pool_size = [2, 0] strides = [2, 2] padding = valid : tensor<2x8x8x1xf32> -> tensor<2x4x4x1xf32>
  graph.output %y : tensor<2x4x4x1xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  // expected-error@+1 {{'graph.max_pool2d' op attribute 'pool_size' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements}}
  %y = graph.max_pool2d %x pool_size = [2] strides = [2, 2] padding = valid : tensor<2x8x8x1xf32> -> tensor<2x4x4x1xf32>
  graph.output %y : tensor<2x4x4x1xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x2x1xf32>
  // expected-error@+2 {{pool window 3x3 does not fit input 8x2 with padding valid}}
  // expected-error@+1 {{'graph.max_pool2d' op failed to infer returned types}}
  %y = graph.max_pool2d %x pool_size = [3, 3] strides = [1, 1] padding = valid : tensor<2x8x2x1xf32> -> tensor<2x6x1x1xf32>
  graph.output %y : tensor<2x6x1x1xf32>
}

// -----

// Same padding fits any window, but not an empty input.
graph.model @m {
  %x = graph.input "x" : tensor<2x0x4x1xf32>
  // expected-error@+2 {{pool window 2x2 does not fit input 0x4 with padding same}}
  // expected-error@+1 {{'graph.avg_pool2d' op failed to infer returned types}}
  %y = graph.avg_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = same : tensor<2x0x4x1xf32> -> tensor<2x0x2x1xf32>
  graph.output %y : tensor<2x0x2x1xf32>
}

// -----

// Same padding: ceil(7 / 2) = 4, not 3.
graph.model @m {
  %x = graph.input "x" : tensor<2x7x7x1xf32>
  // expected-error@+2 {{'graph.max_pool2d' op inferred type(s) 'tensor<2x4x4x1xf32>' are incompatible with return type(s) of operation 'tensor<2x3x3x1xf32>'}}
  // expected-error@+1 {{'graph.max_pool2d' op failed to infer returned types}}
  %y = graph.max_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = same : tensor<2x7x7x1xf32> -> tensor<2x3x3x1xf32>
  graph.output %y : tensor<2x3x3x1xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x64xf32>
  // expected-error@+2 {{expects input of rank 4 (NHWC), got rank 2}}
  // expected-error@+1 {{'graph.global_avg_pool2d' op failed to infer returned types}}
  %y = graph.global_avg_pool2d %x : tensor<2x64xf32> -> tensor<2x64xf32>
  graph.output %y : tensor<2x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.dense and graph.bias_add
//===----------------------------------------------------------------------===//


graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %k = graph.input "k" : tensor<4x3x1xf32>
  // expected-error@+2 {{expects kernel of rank 2 ([in, out]), got rank 3}}
  // expected-error@+1 {{'graph.dense' op failed to infer returned types}}
  %y = graph.dense %x, %k : (tensor<2x4xf32>, tensor<4x3x1xf32>) -> tensor<2x3xf32>
  graph.output %y : tensor<2x3xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<4xf32>
  %k = graph.input "k" : tensor<4x3xf32>
  // expected-error@+2 {{expects input of rank >= 2 ([batch, ..., features]), got rank 1}}
  // expected-error@+1 {{'graph.dense' op failed to infer returned types}}
  %y = graph.dense %x, %k : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  graph.output %y : tensor<3xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xbf16>
  %k = graph.input "k" : tensor<4x3xf32>
  // expected-error@+2 {{input element type 'bf16' differs from kernel element type 'f32'}}
  // expected-error@+1 {{'graph.dense' op failed to infer returned types}}
  %y = graph.dense %x, %k : (tensor<2x4xbf16>, tensor<4x3xf32>) -> tensor<2x3xbf16>
  graph.output %y : tensor<2x3xbf16>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x5x4xf32>
  %k = graph.input "k" : tensor<5x3xf32>
  // expected-error@+2 {{kernel rows (5) must match input features (4)}}
  // expected-error@+1 {{'graph.dense' op failed to infer returned types}}
  %y = graph.dense %x, %k : (tensor<2x5x4xf32>, tensor<5x3xf32>) -> tensor<2x5x3xf32>
  graph.output %y : tensor<2x5x3xf32>
}

// -----

// bias_add's custom form names no result type: the parser infers it, so its
// errors come from the parser alone, without "failed to infer returned types".
graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %b = graph.input "b" : tensor<1x4xf32>
  // expected-error@+1 {{expects bias of rank 1, got rank 2}}
  %y = graph.bias_add %x, %b : tensor<2x4xf32>, tensor<1x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x5x5x4xf32>
  %b = graph.input "b" : tensor<5xf32>
  // expected-error@+1 {{bias size (5) must match the input's last dimension (4)}}
  %y = graph.bias_add %x, %b : tensor<2x5x5x4xf32>, tensor<5xf32>
  graph.output %y : tensor<2x5x5x4xf32>
}

// -----

// A scalar input has no last dimension to match.
func.func @scalar(%x: tensor<f32>, %b: tensor<1xf32>) {
  // expected-error@+1 {{bias size (1) must match the input's last dimension (0)}}
  %y = graph.bias_add %x, %b : tensor<f32>, tensor<1xf32>
  return
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %b = graph.input "b" : tensor<4xf16>
  // expected-error@+1 {{bias element type 'f16' differs from input element type 'f32'}}
  %y = graph.bias_add %x, %b : tensor<2x4xf32>, tensor<4xf16>
  graph.output %y : tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Activations and dropout
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.softmax' op axis 2 is out of range for rank 2}}
  %y = graph.softmax %x {axis = 2} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.softmax' op axis -3 is out of range for rank 2}}
  %y = graph.softmax %x {axis = -3} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.dropout' op rate must be in [0, 1), got 1}}
  %y = graph.dropout %x {rate = 1.0, seed = 0} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.dropout' op rate must be in [0, 1), got -0.1}}
  %y = graph.dropout %x {rate = -0.1, seed = 0} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.dropout' op requires attribute 'rate'}}
  %y = graph.dropout %x {seed = 0} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.elu' op attribute 'alpha' failed to satisfy constraint: 64-bit float attribute}}
  %y = graph.elu %x {alpha = 1 : i32} : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.relu' op requires the same type for all operands and results}}
  %y = "graph.relu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf16>
  graph.output %y : tensor<2x4xf16>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xi32>
  // expected-error@+1 {{'graph.sigmoid' op operand #0 must be statically shaped tensor of floats, but got 'tensor<2x4xi32>'}}
  %y = graph.sigmoid %x : tensor<2x4xi32>
  graph.output %y : tensor<2x4xi32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.flatten and graph.reshape
//===----------------------------------------------------------------------===//

func.func @scalar(%x: tensor<f32>) {
  // expected-error@+2 {{expects input with a batch dimension}}
  // expected-error@+1 {{'graph.flatten' op failed to infer returned types}}
  %y = graph.flatten %x : tensor<f32> -> tensor<1xf32>
  return
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x3x4xf32>
  // expected-error@+2 {{'graph.flatten' op inferred type(s) 'tensor<2x12xf32>' are incompatible with return type(s) of operation 'tensor<24xf32>'}}
  // expected-error@+1 {{'graph.flatten' op failed to infer returned types}}
  %y = graph.flatten %x : tensor<2x3x4xf32> -> tensor<24xf32>
  graph.output %y : tensor<24xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x12xf32>
  // expected-error@+1 {{'graph.reshape' op must keep the batch dimension: 'tensor<2x12xf32>' -> 'tensor<4x6xf32>'}}
  %y = graph.reshape %x : tensor<2x12xf32> -> tensor<4x6xf32>
  graph.output %y : tensor<4x6xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x12xf32>
  // expected-error@+1 {{'graph.reshape' op must keep the batch dimension: 'tensor<2x12xf32>' -> 'tensor<f32>'}}
  %y = graph.reshape %x : tensor<2x12xf32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x12xf32>
  // expected-error@+1 {{'graph.reshape' op cannot reshape 24 elements ('tensor<2x12xf32>') into 26 ('tensor<2x13xf32>')}}
  %y = graph.reshape %x : tensor<2x12xf32> -> tensor<2x13xf32>
  graph.output %y : tensor<2x13xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x12xf32>
  // expected-error@+1 {{'graph.reshape' op must keep the element type}}
  %y = graph.reshape %x : tensor<2x12xf32> -> tensor<2x3x4xf16>
  graph.output %y : tensor<2x3x4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// graph.add and graph.concatenate
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.add' op needs at least 2 inputs, got 1}}
  %y = graph.add %x : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+1 {{'graph.add' op expected 1 or more operands, but found 0}}
  %y = graph.add : tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %z = graph.input "z" : tensor<2x1xf32>
  // expected-error@+1 {{'graph.add' op requires the same type for all operands and results}}
  %y = "graph.add"(%x, %z) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+2 {{needs at least 2 inputs, got 1}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x axis = 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

// The batch axis cannot be concatenated, whichever way it is counted.
graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+2 {{axis -2 must name a non-batch axis of rank 2}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %x axis = -2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  graph.output %y : tensor<4x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  // expected-error@+2 {{axis 2 must name a non-batch axis of rank 2}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %x axis = 2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  graph.output %y : tensor<2x8xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %z = graph.input "z" : tensor<2x4x1xf32>
  // expected-error@+2 {{expects input #1 of rank 2, got rank 3}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %z axis = 1 : (tensor<2x4xf32>, tensor<2x4x1xf32>) -> tensor<2x8xf32>
  graph.output %y : tensor<2x8xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %z = graph.input "z" : tensor<2x4xf16>
  // expected-error@+2 {{input #2 has element type 'f16', input #0 has 'f32'}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %x, %z axis = 1 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf16>) -> tensor<2x12xf32>
  graph.output %y : tensor<2x12xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4x4x3xf32>
  %z = graph.input "z" : tensor<2x4x5x3xf32>
  // expected-error@+2 {{input #1 has shape 'tensor<2x4x5x3xf32>', which differs from input #0 ('tensor<2x4x4x3xf32>') outside axis 3}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %z axis = -1 : (tensor<2x4x4x3xf32>, tensor<2x4x5x3xf32>) -> tensor<2x4x4x6xf32>
  graph.output %y : tensor<2x4x4x6xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %z = graph.input "z" : tensor<2x3xf32>
  // expected-error@+2 {{'graph.concatenate' op inferred type(s) 'tensor<2x7xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error@+1 {{'graph.concatenate' op failed to infer returned types}}
  %y = graph.concatenate %x, %z axis = 1 : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<2x8xf32>
  graph.output %y : tensor<2x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// graph.batch_norm
//===----------------------------------------------------------------------===//

graph.model @m {
  %x = graph.input "x" : tensor<4xf32>
  %s = graph.input "s" : tensor<4xf32>
  // expected-error@+2 {{expects input of rank >= 2, got rank 1}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  graph.output %y : tensor<4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  %t = graph.input "t" : tensor<3xf32>
  // expected-error@+2 {{moving_mean has 3 values, the input has 4 channels}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %t, %s : (tensor<2x4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  %t = graph.input "t" : tensor<1x4xf32>
  // expected-error@+2 {{expects moving_variance of rank 1, got rank 2}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %t : (tensor<2x4xf32>, tensor<4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  %t = graph.input "t" : tensor<8xf32>
  // expected-error@+2 {{gamma has 8 values, the input has 4 channels}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %s gamma %t beta %s : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  %t = graph.input "t" : tensor<8xf32>
  // expected-error@+2 {{beta has 8 values, the input has 4 channels}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %s beta %t : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %dy = graph.input "dy" : tensor<2x4xf32>
  %t = graph.input "t" : tensor<8xf32>
  // expected-error@+2 {{moving_variance has 8 values, output_grad has 4 channels}}
  // expected-error@+1 {{'graph.batch_norm_inference_grad' op failed to infer returned types}}
  %dx = graph.batch_norm_inference_grad %dy, %t : (tensor<2x4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  graph.output %dx : tensor<2x4xf32>
}

// -----

graph.model @m {
  %dy = graph.input "dy" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  %t = graph.input "t" : tensor<8xf32>
  // expected-error@+2 {{gamma has 8 values, output_grad has 4 channels}}
  // expected-error@+1 {{'graph.batch_norm_inference_grad' op failed to infer returned types}}
  %dx = graph.batch_norm_inference_grad %dy, %s gamma %t : (tensor<2x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  graph.output %dx : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  // expected-error@+2 {{epsilon must be > 0, got 0}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %s {epsilon = 0.0 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x4xf32>
  %s = graph.input "s" : tensor<4xf32>
  // expected-error@+2 {{momentum must be in [0, 1], got 1.5}}
  // expected-error@+1 {{'graph.batch_norm' op failed to infer returned types}}
  %y = graph.batch_norm %x, %s, %s {momentum = 1.5 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  graph.output %y : tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Losses and accuracy
//===----------------------------------------------------------------------===//

graph.model @m {
  %p = graph.input "p" : tensor<2x3x4xf32>
  %l = graph.input "l" : tensor<2xi32>
  // expected-error@+2 {{expects predictions of rank 2 ([batch, classes]), got rank 3}}
  // expected-error@+1 {{'graph.sparse_categorical_crossentropy' op failed to infer returned types}}
  %y = graph.sparse_categorical_crossentropy %p, %l : tensor<2x3x4xf32>, tensor<2xi32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2xi32>
  // expected-error@+2 {{expects one-hot labels [batch, classes], got 'tensor<2xi32>'}}
  // expected-error@+1 {{'graph.categorical_crossentropy' op failed to infer returned types}}
  %y = graph.categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<2xi32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x10xf32>
  // expected-error@+2 {{expects class-index labels [batch] of integers, got 'tensor<2x10xf32>'}}
  // expected-error@+1 {{'graph.sparse_categorical_crossentropy' op failed to infer returned types}}
  %y = graph.sparse_categorical_crossentropy %p, %l from_logits : tensor<2x10xf32>, tensor<2x10xf32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2xf32>
  // expected-error@+2 {{class-index labels must be integers, got 'tensor<2xf32>'}}
  // expected-error@+1 {{'graph.sparse_categorical_crossentropy' op failed to infer returned types}}
  %y = graph.sparse_categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<2xf32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x9xf32>
  // expected-error@+2 {{one-hot labels 'tensor<2x9xf32>' must have the predictions' shape 'tensor<2x10xf32>'}}
  // expected-error@+1 {{'graph.categorical_crossentropy' op failed to infer returned types}}
  %y = graph.categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<2x9xf32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x10xi32>
  // expected-error@+2 {{one-hot labels must be floats, got 'tensor<2x10xi32>'}}
  // expected-error@+1 {{'graph.categorical_crossentropy' op failed to infer returned types}}
  %y = graph.categorical_crossentropy %p, %l from_logits : tensor<2x10xf32>, tensor<2x10xi32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<3xi32>
  // expected-error@+2 {{labels batch (3) differs from predictions batch (2)}}
  // expected-error@+1 {{'graph.sparse_categorical_crossentropy' op failed to infer returned types}}
  %y = graph.sparse_categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<3xi32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

// The loss has the predictions' element type.
graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x10xf32>
  // expected-error@+2 {{'graph.categorical_crossentropy' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error@+1 {{'graph.categorical_crossentropy' op failed to infer returned types}}
  %y = graph.categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<2x10xf32> -> tensor<f16>
  graph.output %y : tensor<f16>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x10xf32>
  // expected-error@+1 {{'graph.categorical_crossentropy' op result #0 must be 0D tensor of floating-point values, but got 'tensor<2xf32>'}}
  %y = graph.categorical_crossentropy %p, %l : tensor<2x10xf32>, tensor<2x10xf32> -> tensor<2xf32>
  graph.output %y : tensor<2xf32>
}

// -----

// accuracy takes either kind of label; a rank-3 label is neither.
graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<2x10x1xf32>
  // expected-error@+2 {{one-hot labels 'tensor<2x10x1xf32>' must have the predictions' shape 'tensor<2x10xf32>'}}
  // expected-error@+1 {{'graph.accuracy' op failed to infer returned types}}
  %y = graph.accuracy %p, %l : tensor<2x10xf32>, tensor<2x10x1xf32> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

graph.model @m {
  %p = graph.input "p" : tensor<2x10xf32>
  %l = graph.input "l" : tensor<4xi64>
  // expected-error@+2 {{labels batch (4) differs from predictions batch (2)}}
  // expected-error@+1 {{'graph.accuracy' op failed to infer returned types}}
  %y = graph.accuracy %p, %l : tensor<2x10xf32>, tensor<4xi64> -> tensor<f32>
  graph.output %y : tensor<f32>
}

// -----

// expected-error@+1 {{parameter 'value' given twice}}
graph.variable @v : tensor<3xf32> = #graph.init<constant, value = 1.0, value = 2.0>

// -----

// An infinite epsilon would print as `inf`, which does not read back.
// expected-error@+1 {{adam needs a finite epsilon > 0, got inf}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e400, amsgrad = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x1xf32>
  %k = graph.input "k" : tensor<1x0x1x4xf32>
  // expected-error@+2 {{kernel dimensions must be >= 1, got 'tensor<1x0x1x4xf32>'}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<1x0x1x4xf32>) -> tensor<2x8x9x4xf32>
  graph.output %y : tensor<2x8x9x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x4xf32>
  %k = graph.input "k" : tensor<3x3x3x4xf32>
  // expected-error@+2 {{kernel input channels (3) times groups (2) must match input channels (4)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 2 : (tensor<2x8x8x4xf32>, tensor<3x3x3x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x4xf32>
  %k = graph.input "k" : tensor<3x3x2x5xf32>
  // expected-error@+2 {{kernel filters (5) must be a multiple of groups (2)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 2 : (tensor<2x8x8x4xf32>, tensor<3x3x2x5xf32>) -> tensor<2x6x6x5xf32>
  graph.output %y : tensor<2x6x6x5xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x4xf32>
  %k = graph.input "k" : tensor<3x3x4x4xf32>
  // expected-error@+2 {{groups must be >= 1, got 0}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 0 : (tensor<2x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

// Keras' depthwise form [kh, kw, C, m] only with groups = C.
graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x4xf32>
  %dy = graph.input "dy" : tensor<2x6x6x8xf32>
  // expected-error@+1 {{kernel input channels (4) times groups (2) must match input channels (4)}}
  %dk = graph.conv2d_grad_kernel %x, %dy strides = [1, 1] padding = valid dilations = [1, 1] groups = 2 : (tensor<2x8x8x4xf32>, tensor<2x6x6x8xf32>) -> tensor<3x3x4x2xf32>
  graph.output %dy : tensor<2x6x6x8xf32>
}

// -----

graph.model @pool_grad_sum_of_wrong_size {
  %x = graph.input "x" : tensor<2x8x8x8xf32>
  %y = graph.input "y" : tensor<2x4x4x8xf32>
  // expected-error@+1 {{input_grad_sum (one per channel) must be 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %dx, %db = graph.max_pool2d_grad %x, %y, %y pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x8x8x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<4xf32>)
  graph.output %dx : tensor<2x8x8x8xf32>
}

// -----

graph.model @conv_pool_output_not_pooled {
  %x = graph.input "x" : tensor<2x10x10x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  // expected-error@+1 {{output must be 'tensor<2x4x4x8xf32>', got 'tensor<2x8x8x8xf32>'}}
  %y, %a = graph.fused_conv2d_pool %x, %k strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x10x10x3xf32>, tensor<3x3x3x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x4x4x8xi32>)
  graph.output %y : tensor<2x8x8x8xf32>
}

// -----

graph.model @conv_pool_argmax_not_i32 {
  %x = graph.input "x" : tensor<2x10x10x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  // expected-error@+1 {{result #1 must be statically shaped tensor of i32, but got 'tensor<2x4x4x8xi64>'}}
  %y, %a = graph.fused_conv2d_pool %x, %k strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x10x10x3xf32>, tensor<3x3x3x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xi64>)
  graph.output %y : tensor<2x4x4x8xf32>
}

// -----

graph.model @argmax_grad_of_another_pool {
  %a = graph.input "a" : tensor<2x4x4x8xi32>
  %y = graph.input "y" : tensor<2x4x4x8xf32>
  // expected-error@+1 {{output (the forward pool's result) must be 'tensor<2x3x3x8xf32>', got 'tensor<2x4x4x8xf32>'}}
  %dx = graph.max_pool2d_argmax_grad %a, %y, %y pool_size = [3, 3] strides = [2, 2] padding = valid : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x8x8x8xf32>
  graph.output %dx : tensor<2x8x8x8xf32>
}

// -----

graph.model @argmax_grad_argmax_of_wrong_shape {
  %a = graph.input "a" : tensor<2x4x4x4xi32>
  %y = graph.input "y" : tensor<2x4x4x8xf32>
  // expected-error@+1 {{argmax must be 'tensor<2x4x4x8xi32>', got 'tensor<2x4x4x4xi32>'}}
  %dx = graph.max_pool2d_argmax_grad %a, %y, %y pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x4xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x8x8x8xf32>
  graph.output %dx : tensor<2x8x8x8xf32>
}

// -----

graph.model @argmax_grad_sum_of_wrong_size {
  %a = graph.input "a" : tensor<2x4x4x8xi32>
  %y = graph.input "y" : tensor<2x4x4x8xf32>
  // expected-error@+1 {{input_grad_sum (one per channel) must be 'tensor<8xf32>', got 'tensor<2x8xf32>'}}
  %dx, %db = graph.max_pool2d_argmax_grad %a, %y, %y pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x8xf32>)
  graph.output %dx : tensor<2x8x8x8xf32>
}

// -----

graph.model @conv_pool_argmax_of_wrong_shape {
  %x = graph.input "x" : tensor<2x10x10x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  // expected-error@+1 {{argmax must be 'tensor<2x4x4x8xi32>', got 'tensor<2x2x2x8xi32>'}}
  %y, %a = graph.fused_conv2d_pool %x, %k strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x10x10x3xf32>, tensor<3x3x3x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x2x2x8xi32>)
  graph.output %y : tensor<2x4x4x8xf32>
}

// -----

// A variable stored in another layout than Keras' names its Keras form.

// expected-error@+1 {{logical_shape and logical_permutation go together}}
graph.variable @"a/kernel" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_shape = array<i64: 3, 3, 2, 4>}

// -----

// expected-error@+1 {{logical_permutation has 3 axes, logical_shape 4}}
graph.variable @"a/kernel" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 2, 0, 1>, logical_shape = array<i64: 3, 3, 2, 4>}

// -----

// expected-error@+1 {{logical_permutation is not a permutation of 4 axes}}
graph.variable @"a/kernel" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 0, 2>, logical_shape = array<i64: 3, 3, 2, 4>}

// -----

// expected-error@+1 {{logical_shape has 96 elements, the type 72}}
graph.variable @"a/kernel" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 4, 2, 4>}

// -----

// expected-error@+1 {{logical_shape must have dimensions >= 1 whose product fits in 64 bits}}
graph.variable @"a/kernel" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 0, 2, 4>}

// -----

// An OHWI kernel [F, kh, kw, C / groups] is checked as the HWIO one it
// holds: here 2 input channels where the input has 3.
graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x3xf32>
  %k = graph.input "k" : tensor<4x3x3x2xf32>
  // expected-error@+2 {{kernel input channels (2) must match input channels (3)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x8x8x3xf32>, tensor<4x3x3x2xf32>) -> tensor<2x6x6x4xf32>
  graph.output %y : tensor<2x6x6x4xf32>
}

// -----

graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x2xf32>
  %dy = graph.input "dy" : tensor<2x6x6x4xf32>
  // expected-error@+1 {{'graph.conv2d_grad_kernel' op output_grad (the forward conv2d's result) must be 'tensor<2x6x6x3xf32>', got 'tensor<2x6x6x4xf32>'}}
  %dk = graph.conv2d_grad_kernel %x, %dy strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x8x8x2xf32>, tensor<2x6x6x4xf32>) -> tensor<3x3x3x2xf32>
  graph.output %dk : tensor<3x3x3x2xf32>
}

// -----

// OHWI has no depthwise form of its own: a grouped OHWI kernel holds
// C / groups channels ([C * m, kh, kw, 1] for a depthwise one).
graph.model @m {
  %x = graph.input "x" : tensor<4x5x5x3xf32>
  %k = graph.input "k" : tensor<2x3x3x3xf32>
  // expected-error@+2 {{ohwi kernel input channels (3) times groups (3) must match input channels (3)}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 3 filter_layout = ohwi : (tensor<4x5x5x3xf32>, tensor<2x3x3x3xf32>) -> tensor<4x3x3x6xf32>
  graph.output %y : tensor<4x3x3x6xf32>
}

// -----

// An OHWI kernel's dimensions are reported as the operand has them.
graph.model @m {
  %x = graph.input "x" : tensor<2x8x8x2xf32>
  %k = graph.input "k" : tensor<4x0x3x2xf32>
  // expected-error@+2 {{kernel dimensions must be >= 1, got 'tensor<4x0x3x2xf32>'}}
  // expected-error@+1 {{'graph.conv2d' op failed to infer returned types}}
  %y = graph.conv2d %x, %k strides = [1, 1] padding = same dilations = [1, 1] filter_layout = ohwi : (tensor<2x8x8x2xf32>, tensor<4x0x3x2xf32>) -> tensor<2x8x8x4xf32>
  graph.output %y : tensor<2x8x8x4xf32>
}

// -----

// A fused kernel gradient's workspace is the dense gradient only with
// writes_workspace: without it no backend need write it, so nothing may
// read it.
graph.model @m {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %a = graph.input "a" : tensor<2x1x1x8xi32>
  %y = graph.input "y" : tensor<2x1x1x8xf32>
  // expected-error@+1 {{'graph.fused_conv2d_pool_grad_kernel' op workspace is read, but without writes_workspace no backend need write it}}
  %dk, %ws = graph.fused_conv2d_pool_grad_kernel %x, %a, %y, %y strides = [1, 1] padding = valid dilations = [1, 1] pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x5x5x1xf32>, tensor<2x1x1x8xi32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> (tensor<3x3x1x8xf32>, tensor<2x3x3x8xf32>)
  graph.output %dk, %ws : tensor<3x3x1x8xf32>, tensor<2x3x3x8xf32>
}
