// RUN: graph-opt %s --split-input-file --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step | graph-opt --split-input-file | FileCheck %s

// An element-wise loss (graph.pointwise_loss): the labels are float targets
// of the output's shape, the backward starts at graph.pointwise_loss_grad
// with the loss's options, "accuracy" on one output unit is binary accuracy
// (Keras' compile_utils.get_metric) and "mae" the mean absolute error; the
// evaluation step weights them by sample_weight.

graph.variable @"dense/kernel" : tensor<3x1xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x1xf32>
  %y = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  graph.output %y : tensor<4x1xf32>
}
graph.training @m losses = [#graph.output_loss<kind = binary_crossentropy, from_logits = true, label_smoothing = 0.1, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = mean_absolute_error, name = "mae">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// CHECK-LABEL: graph.model @train_step
// CHECK: %[[T:.*]] = graph.input "labels" : tensor<4x1xf32>
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK: %[[Y:.*]] = graph.dense
// CHECK-NEXT: %[[L:.*]] = graph.pointwise_loss binary_crossentropy %[[Y]], %[[T]] weights %[[TW]] from_logits label_smoothing = 1.000000e-01 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[A:.*]] = graph.pointwise_loss binary_accuracy %[[Y]], %[[T]] weights %[[TMW]] : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[M:.*]] = graph.pointwise_loss mean_absolute_error %[[Y]], %[[T]] weights %[[TMW]] : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[G:.*]] = graph.pointwise_loss_grad binary_crossentropy %[[Y]], %[[T]] weights %[[TW]] from_logits label_smoothing = 1.000000e-01 : tensor<4x1xf32>, tensor<4xf32>
// CHECK: graph.dense_grad_kernel %{{.*}}, %[[G]]
// CHECK-LABEL: graph.model @eval_step
// CHECK: %[[ET:.*]] = graph.input "labels" : tensor<4x1xf32>
// CHECK: %[[W:.*]] = graph.input "sample_weight" : tensor<4xf32>
// CHECK-NEXT: %[[MW:.*]] = graph.input "metric_weight" : tensor<4xf32>
// CHECK: graph.pointwise_loss binary_crossentropy %{{.*}}, %[[ET]] weights %[[W]] from_logits label_smoothing = 1.000000e-01
// CHECK: graph.pointwise_loss binary_accuracy %{{.*}}, %[[ET]] weights %[[MW]]

// -----

// reduction = "sum" on a [B, T, K] output: the loss (and its gradient) times
// B * T, the per-sample losses' count (Keras reduces over the last axis).

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x5x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x5x3xf32>, tensor<3x2xf32>) -> tensor<4x5x2xf32>
  graph.output %y : tensor<4x5x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = huber, delta = 0.5, sum_reduction = true>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// CHECK-LABEL: graph.model @train_step
// CHECK: %[[L:.*]] = graph.pointwise_loss huber %{{.*}}, %{{.*}} weights %{{.*}} delta = 5.000000e-01 : tensor<4x5x2xf32>, tensor<4x5x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: graph.scale_shift %[[L]] {scale = 2.000000e+01 : f64} : tensor<f32>
// CHECK: %[[G:.*]] = graph.pointwise_loss_grad huber %{{.*}}, %{{.*}} weights %{{.*}} delta = 5.000000e-01 : tensor<4x5x2xf32>, tensor<4xf32>
// CHECK-NEXT: graph.scale_shift %[[G]] {scale = 2.000000e+01 : f64} : tensor<4x5x2xf32>

// -----

// The focal cross-entropies' options go to the loss and its gradient; a row
// kind's "sum" is the mean times the rows (B * T, one loss a row).

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x5x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x5x3xf32>, tensor<3x2xf32>) -> tensor<4x5x2xf32>
  graph.output %y : tensor<4x5x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_focal_crossentropy, from_logits = true, label_smoothing = 0.1, alpha = 0.5, gamma = 3.0, sum_reduction = true>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// CHECK-LABEL: graph.model @train_step
// CHECK: %[[L:.*]] = graph.pointwise_loss categorical_focal_crossentropy %{{.*}}, %{{.*}} weights %{{.*}} from_logits label_smoothing = 1.000000e-01 alpha = 5.000000e-01 gamma = 3.000000e+00 : tensor<4x5x2xf32>, tensor<4x5x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: graph.scale_shift %[[L]] {scale = 2.000000e+01 : f64} : tensor<f32>
// CHECK: %[[G:.*]] = graph.pointwise_loss_grad categorical_focal_crossentropy %{{.*}}, %{{.*}} weights %{{.*}} from_logits label_smoothing = 1.000000e-01 alpha = 5.000000e-01 gamma = 3.000000e+00 : tensor<4x5x2xf32>, tensor<4xf32>
// CHECK-NEXT: graph.scale_shift %[[G]] {scale = 2.000000e+01 : f64} : tensor<4x5x2xf32>
