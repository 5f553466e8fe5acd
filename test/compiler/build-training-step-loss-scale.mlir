// RUN: graph-opt %s --split-input-file --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step | graph-opt --split-input-file | FileCheck %s
// Fused, the updates keep their loss scale; replicated, each replica's
// share of the global batch is marked on the scaling, the updates and the
// scale's update, and the skip follows the all-reduced gradients' norm.
// RUN: graph-opt %s --split-input-file --graph-build-training-step --graph-fuse | FileCheck %s --check-prefix=FUSE
// RUN: graph-opt %s --split-input-file --graph-build-training-step --graph-fuse --dist-replicate=num-replicas=2 --dist-insert-all-reduce | FileCheck %s --check-prefix=DIST

// A model that computes in float16 (Keras' mixed_float16, after
// graph-assign-precision) gets Keras' LossScaleOptimizer with its defaults:
// the scale (2^15), the finite steps since it last changed and the updates
// applied are variables; the loss gradient is multiplied by the scale; one
// norm of the gradients decides the skip; the updates take (scale, norm,
// iterations); graph.loss_scale_update moves the scale (doubled after 2000
// finite steps); grad_norm is the unscaled norm, and loss_scale the scale
// after the step.

// CHECK-DAG: graph.variable @"optimizer/dynamic_scale" : tensor<1xf32> = #graph.init<constant, value = 32768.0> {trainable = false}
// CHECK-DAG: graph.variable @"optimizer/step_counter" : tensor<1xf32> = #graph.init<zeros> {trainable = false}
// CHECK-DAG: graph.variable @"optimizer/iterations" : tensor<1xf32> = #graph.init<zeros> {trainable = false}
// CHECK-LABEL: graph.model @train_step
// CHECK-DAG: %[[S:.+]] = graph.read_variable @"optimizer/dynamic_scale" : tensor<1xf32>
// CHECK-DAG: %[[C:.+]] = graph.read_variable @"optimizer/step_counter" : tensor<1xf32>
// CHECK-DAG: %[[I:.+]] = graph.read_variable @"optimizer/iterations" : tensor<1xf32>
// CHECK: %[[SEED:.+]] = graph.categorical_crossentropy_grad
// CHECK-NEXT: %[[SCALED:.+]] = graph.scale_by %[[SEED]], %[[S]] : tensor<4x2xf32>, tensor<1xf32>
// CHECK-NEXT: %[[DL:.+]] = graph.softmax_grad %[[SCALED]]
// CHECK-NEXT: graph.cast %[[DL]] : tensor<4x2xf32> -> tensor<4x2xf16>
// CHECK: %[[N:.+]] = graph.global_norm
// CHECK: graph.optimizer_update #graph.sgd<{{.*}}> params({{.*}}) grads({{.*}}) slots() loss_scale(%[[S]], %[[N]], %[[I]] : tensor<1xf32>, tensor<f32>, tensor<1xf32>)
// CHECK: graph.optimizer_update #graph.sgd<{{.*}}> params({{.*}}) grads({{.*}}) slots() loss_scale(%[[S]], %[[N]], %[[I]] : tensor<1xf32>, tensor<f32>, tensor<1xf32>)
// CHECK: %[[NS:.+]], %[[NC:.+]], %[[NI:.+]], %[[GN:.+]] = graph.loss_scale_update %[[S]], %[[C]], %[[I]], %[[N]] {growth_steps = 2000 : i64} : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<f32>
// CHECK-DAG: graph.assign_variable @"optimizer/dynamic_scale", %[[NS]]
// CHECK-DAG: graph.assign_variable @"optimizer/step_counter", %[[NC]]
// CHECK-DAG: graph.assign_variable @"optimizer/iterations", %[[NI]]
// CHECK: graph.output {names = ["loss", "accuracy", "grad_norm", "loss_scale"]} {{.*}}, %[[GN]], %[[NS]] :
// The evaluation step scales nothing.
// CHECK-LABEL: graph.model @eval_step
// CHECK-NOT: scale_by
// CHECK: graph.output

// FUSE-LABEL: graph.model @train_step
// FUSE: %[[N:.+]] = graph.global_norm
// FUSE: graph.optimizer_update {{.*}} loss_scale(%{{.+}}, %[[N]], %{{.+}} : tensor<1xf32>, tensor<f32>, tensor<1xf32>)
// FUSE-NOT: graph.optimizer_update
// FUSE: graph.loss_scale_update

// DIST-LABEL: graph.model @train_step
// DIST: graph.scale_by {{.*}}replicas = 2 : i64
// DIST: graph.scale_by {{.*}}replicas = 2 : i64
// DIST: %[[U0:[0-9]+]]:2 = dist.unpack {{.*}}dist.device<0>
// DIST: %[[N0:[0-9]+]] = graph.global_norm %[[U0]]#0, %[[U0]]#1 {{.*}}dist.device<0>
// DIST-NEXT: graph.optimizer_update {{.*}} grads(%[[U0]]#0, %[[U0]]#1 : {{.*}}) slots() loss_scale(%{{.+}}, %[[N0]], %{{.+}} : {{.*}}) {{{.*}}replicas = 2 : i64}
// DIST: graph.loss_scale_update %{{.+}}, %{{.+}}, %{{.+}}, %[[N0]] {{{.*}}growth_steps = 2000 : i64, replicas = 2 : i64}

graph.variable @"out/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"out/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %xh = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf16>
  %k = graph.read_variable @"out/kernel" : tensor<3x2xf32>
  %kh = graph.cast %k : tensor<3x2xf32> -> tensor<3x2xf16>
  %0 = graph.dense %xh, %kh : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
  %b = graph.read_variable @"out/bias" : tensor<2xf32>
  %bh = graph.cast %b : tensor<2xf32> -> tensor<2xf16>
  %1 = graph.bias_add %0, %bh : tensor<4x2xf16>, tensor<2xf16>
  %2 = graph.cast %1 : tensor<4x2xf16> -> tensor<4x2xf32>
  %3 = graph.softmax %2 : tensor<4x2xf32>
  graph.output %3 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// A LossScaleOptimizer given to compile scales a float32 model's loss too,
// with its own initial scale and growth steps; a clipping norm is still
// each variable's own.

// CHECK: graph.variable @"optimizer/dynamic_scale" : tensor<1xf32> = #graph.init<constant, value = 1024.0> {trainable = false}
// CHECK-LABEL: graph.model @train_step
// CHECK: %[[N:.+]] = graph.global_norm %{{.+}}, %{{.+}} :
// CHECK: %[[NB:.+]] = graph.global_norm %{{.+}} : tensor<2xf32> -> tensor<f32>
// CHECK-NEXT: graph.optimizer_update #graph.adam<{{.*}}clipnorm = 1.0{{.*}}> {{.*}} norms(%[[NB]] : tensor<f32>) loss_scale(%{{.+}}, %[[N]], %{{.+}} :
// CHECK: graph.loss_scale_update {{.*}} {growth_steps = 5 : i64}

graph.variable @"out/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"out/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"out/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"out/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] loss_scale = 1024.0 loss_scale_growth_steps = 5 optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false, clipnorm = 1.0> global_batch_size = 4

