// RUN: graph-opt %s --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --graph-assign-precision=precision=mixed_float16 --graph-build-training-step | FileCheck %s --check-prefix=POLICY

// A layer of dtype mixed_float16 in a float32 model (no_auto_loss_scale:
// the model's own policy is float32): Keras' compile wraps no
// LossScaleOptimizer, so the float16 layer trains unscaled.

// CHECK-NOT: optimizer/dynamic_scale
// CHECK-LABEL: graph.model @train_step
// CHECK-NOT: graph.scale_by
// CHECK: graph.output {names = ["loss", "grad_norm"]}

// graphc --precision mixed_float16 makes mixed_float16 the model's policy:
// Keras' compile would then wrap the optimizer, and the loss is scaled.
// POLICY: graph.variable @"optimizer/dynamic_scale"
// POLICY-LABEL: graph.model @train_step
// POLICY: graph.scale_by

graph.variable @"half/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %xh = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf16>
  %k = graph.read_variable @"half/kernel" : tensor<3x2xf32>
  %kh = graph.cast %k : tensor<3x2xf32> -> tensor<3x2xf16>
  %0 = graph.dense %xh, %kh : (tensor<4x3xf16>, tensor<3x2xf16>) -> tensor<4x2xf16>
  %1 = graph.cast %0 : tensor<4x2xf16> -> tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = mean_squared_error>] no_auto_loss_scale optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4
