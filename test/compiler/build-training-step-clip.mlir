// RUN: graph-opt %s --split-input-file --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step | graph-opt --split-input-file | FileCheck %s
// Replicated, the updates and every norm that feeds them take the
// all-reduced gradients: clipping follows the all-reduce.
// RUN: graph-opt %s --split-input-file --graph-build-training-step --dist-replicate=num-replicas=2 --dist-insert-all-reduce | FileCheck %s --check-prefix=DIST

// clipnorm: each update takes the norm of its own variable's gradient, a
// graph.global_norm of that gradient alone; grad_norm stays the norm of all
// gradients, after the updates.

// CHECK-LABEL: graph.model @train_step
// CHECK: %[[GB:.*]] = graph.bias_add_grad
// CHECK: %[[GK:.*]] = graph.dense_grad_kernel
// CHECK: %[[NB:.*]] = graph.global_norm %[[GB]] : tensor<2xf32> -> tensor<f32>
// CHECK-NEXT: graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false, clipnorm = 0.5, weight_decay = 0.01> params(%{{.*}} : tensor<2xf32>) grads(%[[GB]] : tensor<2xf32>) slots() norms(%[[NB]] : tensor<f32>) -> (tensor<2xf32>)
// CHECK: %[[NK:.*]] = graph.global_norm %[[GK]] : tensor<3x2xf32> -> tensor<f32>
// CHECK-NEXT: graph.optimizer_update {{.*}} grads(%[[GK]] : tensor<3x2xf32>) slots() norms(%[[NK]] : tensor<f32>)
// CHECK: %[[ALL:.*]] = graph.global_norm %[[GB]], %[[GK]]
// CHECK: graph.output {names = [{{.*}}"grad_norm"]} {{.*}}%[[ALL]] :

// DIST-LABEL: graph.model @train_step
// DIST: %[[U0:[0-9]+]]:2 = dist.unpack {{.*}}dist.device<0>
// DIST: %[[U1:[0-9]+]]:2 = dist.unpack {{.*}}dist.device<1>
// DIST: %[[N:[0-9]+]] = graph.global_norm %[[U0]]#0 {{.*}}: tensor<2xf32> -> tensor<f32>
// DIST-NEXT: graph.optimizer_update {{.*}} grads(%[[U0]]#0 : tensor<2xf32>) slots() norms(%[[N]] : tensor<f32>)
// DIST: %[[N1:[0-9]+]] = graph.global_norm %[[U1]]#0 {{.*}}: tensor<2xf32> -> tensor<f32>
// DIST-NEXT: graph.optimizer_update {{.*}} grads(%[[U1]]#0 : tensor<2xf32>) slots() norms(%[[N1]] : tensor<f32>)

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false, clipnorm = 0.5, weight_decay = 0.01> global_batch_size = 4

// -----

// global_clipnorm: one norm of all gradients, before the first update, feeds
// every update and is the step's grad_norm.

// CHECK-LABEL: graph.model @train_step
// CHECK: %[[GB:.*]] = graph.bias_add_grad
// CHECK: %[[GK:.*]] = graph.dense_grad_kernel
// CHECK: %[[ALL:.*]] = graph.global_norm %[[GB]], %[[GK]] : tensor<2xf32>, tensor<3x2xf32> -> tensor<f32>
// CHECK-NOT: graph.global_norm
// CHECK: graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false, global_clipnorm = 1.0> {{.*}} grads(%[[GB]] : tensor<2xf32>) {{.*}} norms(%[[ALL]] : tensor<f32>)
// CHECK-NOT: graph.global_norm
// CHECK: graph.optimizer_update {{.*}} grads(%[[GK]] : tensor<3x2xf32>) {{.*}} norms(%[[ALL]] : tensor<f32>)
// CHECK-NOT: graph.global_norm
// CHECK: graph.output {names = [{{.*}}"grad_norm"]} {{.*}}%[[ALL]] :

// DIST-LABEL: graph.model @train_step
// DIST: %[[U0:[0-9]+]]:2 = dist.unpack {{.*}}dist.device<0>
// DIST: %[[N:[0-9]+]] = graph.global_norm %[[U0]]#0, %[[U0]]#1 {{.*}}: tensor<2xf32>, tensor<3x2xf32> -> tensor<f32>
// DIST: graph.optimizer_update {{.*}} grads(%[[U0]]#0 : tensor<2xf32>) {{.*}} norms(%[[N]] : tensor<f32>)
// DIST: graph.optimizer_update {{.*}} grads(%[[U0]]#1 : tensor<3x2xf32>) {{.*}} norms(%[[N]] : tensor<f32>)

graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false, global_clipnorm = 1.0> global_batch_size = 4
