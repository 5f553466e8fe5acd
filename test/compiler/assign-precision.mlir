// RUN: graph-opt %s --split-input-file --graph-assign-precision | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-assign-precision --graph-assign-precision | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-assign-precision --graph-build-training-step | FileCheck %s --check-prefix=STEP
// RUN: graph-opt %s --split-input-file --graph-assign-precision=precision=float32 | FileCheck %s --check-prefix=F32
// RUN: graph-opt %s --split-input-file --graph-assign-precision=precision=mixed_float16 | FileCheck %s --check-prefix=F16
// RUN: not graph-opt %s --split-input-file --graph-assign-precision=precision=mixed_bfloat12 2>&1 | FileCheck %s --check-prefix=BAD

// graph-assign-precision makes Keras' mixed policies real, as Keras computes
// them (keras/src/layers/layer.py autocast, AutocastScope): the marked ops
// of a mixed_bfloat16 layer compute in bf16 from bf16 casts of their float32
// inputs and variables (one cast per value, shared by its readers), a
// float32 layer (Keras' advice for a softmax head) reads bf16 values cast
// to float32, and the model's outputs are float32 for the loss. The second
// RUN line checks that a second run changes nothing. Gradients follow the
// forward types (STEP): the float32 loss gradient is cast to bf16, and each
// weight gradient back to float32 for the float32 optimizer.

graph.variable @"hidden/kernel" : tensor<3x5xf32> = #graph.init<glorot_uniform>
graph.variable @"hidden/bias" : tensor<5xf32> = #graph.init<zeros>
graph.variable @"out/kernel" : tensor<5x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"hidden/kernel" {graph.compute_type = bf16} : tensor<3x5xf32>
  %y = graph.dense %x, %k {graph.compute_type = bf16} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %b = graph.read_variable @"hidden/bias" {graph.compute_type = bf16} : tensor<5xf32>
  %z = graph.bias_add %y, %b {graph.compute_type = bf16} : tensor<4x5xf32>, tensor<5xf32>
  %t = graph.tanh %z {graph.compute_type = bf16} : tensor<4x5xf32>
  %k1 = graph.read_variable @"out/kernel" {graph.compute_type = bf16} : tensor<5x2xf32>
  %o = graph.dense %t, %k1 {graph.compute_type = bf16} : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %s = graph.softmax %o {axis = -1 : i64} : tensor<4x2xf32>
  graph.output %s : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// CHECK-LABEL: graph.model @m
// CHECK-NEXT:  %[[X:.+]] = graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT:  %[[XH:.+]] = graph.cast %[[X]] : tensor<4x3xf32> -> tensor<4x3xbf16>
// CHECK-NEXT:  %[[K:.+]] = graph.read_variable @"hidden/kernel" : tensor<3x5xf32>
// CHECK-NEXT:  %[[KH:.+]] = graph.cast %[[K]] : tensor<3x5xf32> -> tensor<3x5xbf16>
// CHECK-NEXT:  %[[Y:.+]] = graph.dense %[[XH]], %[[KH]] : (tensor<4x3xbf16>, tensor<3x5xbf16>) -> tensor<4x5xbf16>
// CHECK-NEXT:  %[[B:.+]] = graph.read_variable @"hidden/bias" : tensor<5xf32>
// CHECK-NEXT:  %[[BH:.+]] = graph.cast %[[B]] : tensor<5xf32> -> tensor<5xbf16>
// CHECK-NEXT:  %[[Z:.+]] = graph.bias_add %[[Y]], %[[BH]] : tensor<4x5xbf16>, tensor<5xbf16>
// CHECK-NEXT:  %[[T:.+]] = graph.tanh %[[Z]] : tensor<4x5xbf16>
// CHECK:       %[[O:.+]] = graph.dense %[[T]], %{{.+}} : (tensor<4x5xbf16>, tensor<5x2xbf16>) -> tensor<4x2xbf16>
// CHECK-NEXT:  %[[OF:.+]] = graph.cast %[[O]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// CHECK-NEXT:  %[[S:.+]] = graph.softmax %[[OF]] : tensor<4x2xf32>
// CHECK-NEXT:  graph.output %[[S]] : tensor<4x2xf32>
// CHECK-NOT:   graph.compute_type

// STEP-LABEL: graph.model @train_step
// STEP:       %[[G:.+]] = graph.sparse_categorical_crossentropy_grad
// STEP-SAME:  -> tensor<4x2xf32>
// STEP-NEXT:  %[[GS:.+]] = graph.softmax_grad %[[G]], %{{.+}} : tensor<4x2xf32>
// STEP-NEXT:  %[[GH:.+]] = graph.cast %[[GS]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// STEP:       %[[GK:.+]] = graph.dense_grad_kernel %{{.+}}, %[[GH]] : (tensor<4x5xbf16>, tensor<4x2xbf16>) -> tensor<5x2xbf16>
// STEP:       graph.cast %[[GK]] : tensor<5x2xbf16> -> tensor<5x2xf32>
// STEP:       graph.tanh_grad %{{.+}}, %{{.+}} : tensor<4x5xbf16>
// STEP:       %[[GB:.+]] = graph.bias_add_grad %{{.+}} : tensor<4x5xbf16> -> tensor<5xbf16>
// STEP:       graph.cast %[[GB]] : tensor<5xbf16> -> tensor<5xf32>
// STEP:       graph.optimizer_update {{.+}} grads(%{{.+}} : tensor<5xf32>)

// --precision float32 removes the marks: no cast at all.
// F32-LABEL: graph.model @m
// F32-NOT:   graph.cast
// F32:       graph.dense %{{.+}}, %{{.+}} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
// F32-NOT:   graph.cast
// F32:       graph.output

// --precision mixed_float16 replaces the policy; the float32 head stays.
// F16-LABEL: graph.model @m
// F16:       graph.dense %{{.+}}, %{{.+}} : (tensor<4x3xf16>, tensor<3x5xf16>) -> tensor<4x5xf16>
// F16:       %[[O:.+]] = graph.dense %{{.+}}, %{{.+}} : (tensor<4x5xf16>, tensor<5x2xf16>) -> tensor<4x2xf16>
// F16-NEXT:  graph.cast %[[O]] : tensor<4x2xf16> -> tensor<4x2xf32>
// F16-NEXT:  graph.softmax %{{.+}} : tensor<4x2xf32>

// BAD: error: unknown precision 'mixed_bfloat12' (Keras' policies: float32, mixed_bfloat16, mixed_float16)

// -----

// BatchNormalization computes in float32 under a mixed policy (Keras casts
// its input to the compute type, as every layer's __call__ does, then to
// float32, and its output back), with float32 statistics; an input read by
// two bf16 layers is cast once.
graph.variable @"bn/moving_mean" : tensor<4xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<4xf32> = #graph.init<ones> {trainable = false}
graph.variable @"d/kernel" : tensor<4x4xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x4xf32>
  %mean = graph.read_variable @"bn/moving_mean" {graph.compute_type = bf16} : tensor<4xf32>
  %var = graph.read_variable @"bn/moving_variance" {graph.compute_type = bf16} : tensor<4xf32>
  %n = graph.batch_norm %x, %mean, %var {epsilon = 1.0e-03 : f64, momentum = 0.99 : f64, graph.compute_type = bf16} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %n {graph.compute_type = bf16} : tensor<2x4xf32>
  %k = graph.read_variable @"d/kernel" {graph.compute_type = bf16} : tensor<4x4xf32>
  %a = graph.dense %x, %k {graph.compute_type = bf16} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = graph.add %r, %a {graph.compute_type = bf16} : tensor<2x4xf32>
  graph.output %s : tensor<2x4xf32>
}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 2

// CHECK-LABEL: graph.model @m
// CHECK:       %[[X:.+]] = graph.input "input_layer" : tensor<2x4xf32>
// CHECK-NEXT:  %[[XH:.+]] = graph.cast %[[X]] : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NEXT:  %[[XF:.+]] = graph.cast %[[XH]] : tensor<2x4xbf16> -> tensor<2x4xf32>
// CHECK:       %[[N:.+]] = graph.batch_norm %[[XF]], %{{.+}}, %{{[^ ]+}}{{.*}} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:  %[[NH:.+]] = graph.cast %[[N]] : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NEXT:  %[[R:.+]] = graph.relu %[[NH]] : tensor<2x4xbf16>
// CHECK:       %[[A:.+]] = graph.dense %[[XH]], %{{.+}} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// CHECK-NEXT:  %[[S:.+]] = graph.add %[[R]], %[[A]] : tensor<2x4xbf16>
// CHECK-NEXT:  %[[SF:.+]] = graph.cast %[[S]] : tensor<2x4xbf16> -> tensor<2x4xf32>
// CHECK-NEXT:  graph.output %[[SF]] : tensor<2x4xf32>

// -----

// A float32 model under --precision mixed_bfloat16: every layer op computes
// in bf16 (F16 runs mixed_float16 the same way).

graph.variable @"d/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"d/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %y : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// CHECK-LABEL: graph.model @m
// CHECK-NOT:   graph.cast
// CHECK:       graph.dense %{{.+}}, %{{.+}} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// F16-LABEL:   graph.model @m
// F16:         graph.dense %{{.+}}, %{{.+}} : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
// F16-NEXT:    graph.cast %{{.+}} : tensor<4x2xf16> -> tensor<4x2xf32>
