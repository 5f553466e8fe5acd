// RUN: graph-opt %s --split-input-file --verify-diagnostics

// graph.training's loss options and the optimizers' gradient accumulation:
// each refusal once.

graph.model @m {
  %x = graph.input "input_layer" : tensor<2x3xf32>
  %0 = graph.softmax %x : tensor<2x3xf32>
  graph.output %0 : tensor<2x3xf32>
}
// expected-error@+1 {{label_smoothing needs categorical_crossentropy (Keras' sparse cross-entropy has none)}}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, label_smoothing = 0.1>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "input_layer" : tensor<2x3xf32>
  %0 = graph.softmax %x : tensor<2x3xf32>
  graph.output %0 : tensor<2x3xf32>
}
// expected-error@+1 {{needs label_smoothing in [0, 1), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, label_smoothing = 1.0>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

graph.model @m {
  %x = graph.input "input_layer" : tensor<2x3xf32>
  %0 = graph.softmax %x : tensor<2x3xf32>
  graph.output {names = ["a", "b"]} %0, %x : tensor<2x3xf32>, tensor<2x3xf32>
}
// expected-error@+1 {{mixes losses of reduction 'sum' and 'sum_over_batch_size' over its outputs, which is not supported: give every output's loss the same reduction}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, sum_reduction = true>, #graph.output_loss<kind = mean_squared_error>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// expected-error@+1 {{nadam needs gradient_accumulation_steps >= 2 (0: off), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.nadam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, gradient_accumulation_steps = 1> global_batch_size = 2

// -----

// expected-error@+1 {{adagrad with gradient_accumulation_steps clips by clipvalue only: clipnorm and global_clipnorm would need the norm of the accumulated mean}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adagrad<learning_rate = 0.001, initial_accumulator_value = 0.1, epsilon = 1.0e-07, clipnorm = 1.0, gradient_accumulation_steps = 2> global_batch_size = 2

// -----

// expected-error@+1 {{adamax needs beta_2 in [0, 1), got 1}}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adamax<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 1.0, epsilon = 1.0e-07> global_batch_size = 2
