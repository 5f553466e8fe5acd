// RUN: graph-opt %s --split-input-file --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step | graph-opt --split-input-file | FileCheck %s

// A trainable conv below a frozen batch norm (Keras' fine-tuning recipe:
// BatchNormalization(trainable=False)): the batch norm stays in inference
// mode in @train_step, the gradient passes through it as
// batch_norm_inference_grad (dy * gamma / sqrt(moving_variance + eps)), and
// the conv kernel and the dense kernel are updated. Gamma, beta and the
// moving statistics get no gradient, no slot and no assignment.

// CHECK-LABEL: graph.model @train_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer" : tensor<2x6x6x2xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels"
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT: %[[C:.*]] = graph.conv2d %[[X]], %[[K0]]
// CHECK-NEXT: %[[G:.*]] = graph.read_variable @"bn/gamma"
// CHECK-NEXT: %[[B:.*]] = graph.read_variable @"bn/beta"
// CHECK-NEXT: %[[MM:.*]] = graph.read_variable @"bn/moving_mean"
// CHECK-NEXT: %[[MV:.*]] = graph.read_variable @"bn/moving_variance"
// CHECK-NEXT: %[[BN:.*]] = graph.batch_norm %[[C]], %[[MM]], %[[MV]] gamma %[[G]] beta %[[B]] {epsilon = 1.000000e-02 : f64}
// CHECK-NOT: batch_norm_train
// CHECK: %[[DF:.*]] = graph.dense_grad_input
// CHECK-NEXT: %[[DBN:.*]] = graph.reshape %[[DF]] : tensor<2x48xf32> -> tensor<2x4x4x3xf32>
// CHECK-NEXT: %[[DC:.*]] = graph.batch_norm_inference_grad %[[DBN]], %[[MV]] gamma %[[G]] {epsilon = 1.000000e-02 : f64} : (tensor<2x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x4x3xf32>
// CHECK-NEXT: %[[DK0:.*]] = graph.conv2d_grad_kernel %[[X]], %[[DC]]
// CHECK-NOT: graph.conv2d_grad_input
// CHECK-NOT: graph.batch_norm_grad
// CHECK: graph.optimizer_update #graph.sgd<{{.*}}> params(%{{.*}} : tensor<48x3xf32>)
// CHECK-NEXT: graph.assign_variable @"dense/kernel"
// CHECK-NEXT: %[[NEW:.*]] = graph.optimizer_update #graph.sgd<{{.*}}> params(%[[K0]] : tensor<3x3x2x3xf32>) grads(%[[DK0]] : tensor<3x3x2x3xf32>)
// CHECK-NEXT: graph.assign_variable @"conv2d/kernel", %[[NEW]]
// CHECK-NOT: graph.assign_variable
// CHECK: graph.output
// CHECK-LABEL: graph.model @eval_step
graph.variable @"conv2d/kernel" : tensor<3x3x2x3xf32> = #graph.init<glorot_uniform>
graph.variable @"bn/gamma" : tensor<3xf32> = #graph.init<ones> {trainable = false}
graph.variable @"bn/beta" : tensor<3xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_mean" : tensor<3xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<3xf32> = #graph.init<ones> {trainable = false}
graph.variable @"dense/kernel" : tensor<48x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x6x6x2xf32>
  %k0 = graph.read_variable @"conv2d/kernel" : tensor<3x3x2x3xf32>
  %0 = graph.conv2d %x, %k0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<2x4x4x3xf32>
  %g = graph.read_variable @"bn/gamma" : tensor<3xf32>
  %b = graph.read_variable @"bn/beta" : tensor<3xf32>
  %mm = graph.read_variable @"bn/moving_mean" : tensor<3xf32>
  %mv = graph.read_variable @"bn/moving_variance" : tensor<3xf32>
  %1 = graph.batch_norm %0, %mm, %mv gamma %g beta %b {epsilon = 1.0e-2 : f64} : (tensor<2x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x4x3xf32>
  %2 = graph.flatten %1 : tensor<2x4x4x3xf32> -> tensor<2x48xf32>
  %k1 = graph.read_variable @"dense/kernel" : tensor<48x3xf32>
  %3 = graph.dense %2, %k1 : (tensor<2x48xf32>, tensor<48x3xf32>) -> tensor<2x3xf32>
  %4 = graph.softmax %3 : tensor<2x3xf32>
  graph.output %4 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// Keras scale=False: beta alone, frozen; the gradient has no gamma operand.
// Between two dense layers, the lower one is trained through it.

// CHECK-LABEL: graph.model @train_step {
// CHECK: %[[MV:.*]] = graph.read_variable @"bn/moving_variance"
// CHECK: %[[DBN:.*]] = graph.softmax_grad
// CHECK-NEXT: %[[DD:.*]] = graph.batch_norm_inference_grad %[[DBN]], %[[MV]] : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: graph.dense_grad_kernel %{{.*}}, %[[DD]]
// CHECK-NOT: graph.assign_variable @"bn/
// CHECK: graph.assign_variable @"dense/kernel"
// CHECK-NOT: graph.assign_variable @"bn/
// CHECK-LABEL: graph.model @eval_step
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"bn/beta" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"bn/beta" : tensor<2xf32>
  %mm = graph.read_variable @"bn/moving_mean" : tensor<2xf32>
  %mv = graph.read_variable @"bn/moving_variance" : tensor<2xf32>
  %1 = graph.batch_norm %0, %mm, %mv beta %b : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4
