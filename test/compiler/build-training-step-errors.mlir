// RUN: graph-opt %s --split-input-file --graph-build-training-step --verify-diagnostics

// Every diagnostic of graph-build-training-step, and the verifier's checks
// on graph.training that the pass relies on.

// expected-error@+1 {{no graph.training op: nothing says which model to train, with which loss and optimizer}}
module {
  graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
  graph.model @m {
    %x = graph.input "input_layer" : tensor<4x3xf32>
    %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
    %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    graph.output %0 : tensor<4x2xf32>
  }
}

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
// expected-note@+1 {{the first one is here}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4
// expected-error@+1 {{only one graph.training per module is supported}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// A model with two outputs and one loss: graph.training's verifier rejects
// it before the pass runs.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0, %0 : tensor<4x2xf32>, tensor<4x2xf32>
}
// expected-error@+1 {{has 1 losses for a model of 2 outputs: one loss per output}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// An output that is not [batch, classes]: also the verifier's.
graph.variable @"conv/kernel" : tensor<1x1x3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x2x2x3xf32>
  %k = graph.read_variable @"conv/kernel" : tensor<1x1x3x2xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x2x2x3xf32>, tensor<1x1x3x2xf32>) -> tensor<4x2x2x2xf32>
  graph.output %0 : tensor<4x2x2x2xf32>
}
// expected-error@+1 {{loss categorical_crossentropy needs float model output [batch, classes], got 'tensor<4x2x2x2xf32>'}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  // expected-error@+1 {{input name 'labels' is taken by an input that the training step adds}}
  %x = graph.input "labels" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  // expected-error@+1 {{input name 'sample_weight' is taken by an input that the training step adds}}
  %x = graph.input "sample_weight" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// The pass adds @train_step and @eval_step; it does not run twice.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4
// expected-error@+1 {{symbol 'eval_step' already exists; graph-build-training-step adds it}}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  graph.output %x : tensor<4x3xf32>
}

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// expected-error@+1 {{symbol 'dense/kernel/m' is taken: the optimizer keeps slot 'm' of 'dense/kernel' under that name}}
graph.variable @"dense/kernel/m" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4

// -----

// Fused ops come from graph-fuse, after this pass: they have no gradient rule.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  // expected-error@+1 {{cannot differentiate 'graph.fused_dense': it lies between trainable variables and the loss, and has no gradient rule}}
  %0 = graph.fused_dense %x, %k activation = relu : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.softmax %0 : tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// Training-mode batch norm writes its moving statistics back: they must be
// variables, not computed values.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"bn/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %m = graph.read_variable @"bn/moving_mean" : tensor<2xf32>
  %mm = graph.relu %m : tensor<2xf32>
  %mv = graph.read_variable @"bn/moving_variance" : tensor<2xf32>
  // expected-error@+1 {{batch_norm's moving_mean must come from graph.read_variable: training updates it with graph.assign_variable}}
  %1 = graph.batch_norm %0, %mm, %mv : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform> {trainable = false}
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
// expected-error@+1 {{no trainable variable of @m affects the loss: nothing to train}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// A warning, as Keras warns: the pass succeeds, and the variable gets no
// slots and no update.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// expected-warning@+1 {{trainable variable 'unused/kernel' does not affect the loss: it gets no gradient and no update}}
graph.variable @"unused/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %u = graph.read_variable @"unused/kernel" : tensor<3x2xf32>
  %1 = graph.dense %x, %u : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// Dynamic loss scaling (a float16 model) with use_ema: refused, naming the
// float16 op.
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %xh = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf16>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %kh = graph.cast %k : tensor<3x2xf32> -> tensor<3x2xf16>
  // expected-note@+1 {{this op computes in float16; train under mixed_bfloat16 (graphc --precision mixed_bfloat16), which needs no loss scaling}}
  %0 = graph.dense %xh, %kh : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
  %1 = graph.cast %0 : tensor<4x2xf16> -> tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}
// expected-error@+1 {{dynamic loss scaling (the model computes in float16) with use_ema is not supported}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true>] ema_momentum = 0.99 optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// A LossScaleOptimizer with gradient accumulation: refused (Keras'
// LossScaleOptimizer does not take it either).
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
// expected-error@+1 {{dynamic loss scaling (a LossScaleOptimizer) with gradient_accumulation_steps is not supported}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true>] loss_scale = 8.0 optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false, gradient_accumulation_steps = 2> global_batch_size = 4

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
// expected-error@+1 {{loss_scale_growth_steps needs loss_scale}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true>] loss_scale_growth_steps = 5 optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %0 : tensor<4x2xf32>
}
// expected-error@+1 {{needs a finite loss_scale > 0, got 0}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true>] loss_scale = 0.0 optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4
