// RUN: graph-opt %s --split-input-file --graph-build-training-step | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step | graph-opt --split-input-file | FileCheck %s

// The model of docs/compiler-ir.md, trained with Adam: slot variables m and v
// right after each trained variable, @m and graph.training unchanged, the
// backward of section 1 op for op, one update per variable in the order
// backward produces the gradients (dense_1/bias first), and @eval_step with
// the same outputs.

// CHECK-LABEL: graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"dense/kernel/m" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense/kernel/v" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @"dense/bias/m" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense/bias/v" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense_1/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"dense_1/kernel/m" : tensor<2x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense_1/kernel/v" : tensor<2x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense_1/bias" : tensor<2xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @"dense_1/bias/m" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"dense_1/bias/v" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// The evaluation step weights every row (the runtime pads a last, partial
// batch with rows of weight 0); the training step returns the norm of the
// gradients it applies, in backward order, as grad_norm.
// CHECK-NEXT: graph.model @m {
// CHECK-NEXT: graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: graph.read_variable @"dense/kernel"
// CHECK-NEXT: graph.dense
// CHECK-NEXT: graph.read_variable @"dense/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.read_variable @"dense_1/kernel"
// CHECK-NEXT: graph.dense
// CHECK-NEXT: graph.read_variable @"dense_1/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: graph.softmax
// CHECK-NEXT: graph.output
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4
// CHECK-NEXT: graph.model @train_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels" : tensor<4x2xf32>
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
// CHECK-NEXT: %[[Y0:.*]] = graph.dense %[[X]], %[[K0]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[B0:.*]] = graph.read_variable @"dense/bias" : tensor<2xf32>
// CHECK-NEXT: %[[Y1:.*]] = graph.bias_add %[[Y0]], %[[B0]] : tensor<4x2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[Y2:.*]] = graph.relu %[[Y1]] : tensor<4x2xf32>
// CHECK-NEXT: %[[K1:.*]] = graph.read_variable @"dense_1/kernel" : tensor<2x2xf32>
// CHECK-NEXT: %[[Y3:.*]] = graph.dense %[[Y2]], %[[K1]] : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[B1:.*]] = graph.read_variable @"dense_1/bias" : tensor<2xf32>
// CHECK-NEXT: %[[Y4:.*]] = graph.bias_add %[[Y3]], %[[B1]] : tensor<4x2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[Y5:.*]] = graph.softmax %[[Y4]] : tensor<4x2xf32>
// CHECK-NEXT: %[[LOSS:.*]] = graph.categorical_crossentropy %[[Y5]], %[[LABELS]] weights %[[TW]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC:.*]] = graph.accuracy %[[Y5]], %[[LABELS]] weights %[[TMW]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[D5:.*]] = graph.categorical_crossentropy_grad %[[Y5]], %[[LABELS]] weights %[[TW]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<4x2xf32>
// CHECK-NEXT: %[[D4:.*]] = graph.softmax_grad %[[D5]], %[[Y5]] : tensor<4x2xf32>
// CHECK-NEXT: %[[DB1:.*]] = graph.bias_add_grad %[[D4]] : tensor<4x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DK1:.*]] = graph.dense_grad_kernel %[[Y2]], %[[D4]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[D2:.*]] = graph.dense_grad_input %[[D4]], %[[K1]] : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[D1:.*]] = graph.relu_grad %[[D2]], %[[Y2]] : tensor<4x2xf32>
// CHECK-NEXT: %[[DB0:.*]] = graph.bias_add_grad %[[D1]] : tensor<4x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DK0:.*]] = graph.dense_grad_kernel %[[X]], %[[D1]] : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.read_variable @"dense_1/bias/m" : tensor<2xf32>
// CHECK-NEXT: %[[V:.*]] = graph.read_variable @"dense_1/bias/v" : tensor<2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[S:[a-z_0-9]+]]:2 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%[[B1]] : tensor<2xf32>) grads(%[[DB1]] : tensor<2xf32>) slots(%[[M]], %[[V]] : tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"dense_1/bias", %[[P]] : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/bias/m", %[[S]]#0 : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/bias/v", %[[S]]#1 : tensor<2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.read_variable @"dense_1/kernel/m" : tensor<2x2xf32>
// CHECK-NEXT: %[[V:.*]] = graph.read_variable @"dense_1/kernel/v" : tensor<2x2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[S:[a-z_0-9]+]]:2 = graph.optimizer_update #graph.adam<{{.*}}> params(%[[K1]] : tensor<2x2xf32>) grads(%[[DK1]] : tensor<2x2xf32>) slots(%[[M]], %[[V]] : tensor<2x2xf32>, tensor<2x2xf32>)
// CHECK-NEXT: graph.assign_variable @"dense_1/kernel", %[[P]] : tensor<2x2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/kernel/m", %[[S]]#0 : tensor<2x2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/kernel/v", %[[S]]#1 : tensor<2x2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.read_variable @"dense/bias/m" : tensor<2xf32>
// CHECK-NEXT: %[[V:.*]] = graph.read_variable @"dense/bias/v" : tensor<2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[S:[a-z_0-9]+]]:2 = graph.optimizer_update #graph.adam<{{.*}}> params(%[[B0]] : tensor<2xf32>) grads(%[[DB0]] : tensor<2xf32>) slots(%[[M]], %[[V]] : tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"dense/bias", %[[P]] : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense/bias/m", %[[S]]#0 : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense/bias/v", %[[S]]#1 : tensor<2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.read_variable @"dense/kernel/m" : tensor<3x2xf32>
// CHECK-NEXT: %[[V:.*]] = graph.read_variable @"dense/kernel/v" : tensor<3x2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[S:[a-z_0-9]+]]:2 = graph.optimizer_update #graph.adam<{{.*}}> params(%[[K0]] : tensor<3x2xf32>) grads(%[[DK0]] : tensor<3x2xf32>) slots(%[[M]], %[[V]] : tensor<3x2xf32>, tensor<3x2xf32>)
// CHECK-NEXT: graph.assign_variable @"dense/kernel", %[[P]] : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"dense/kernel/m", %[[S]]#0 : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"dense/kernel/v", %[[S]]#1 : tensor<3x2xf32>
// CHECK-NEXT: %[[NORM:.*]] = graph.global_norm %[[DB1]], %[[DK1]], %[[DB0]], %[[DK0]] : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32> -> tensor<f32>
// CHECK-NEXT: graph.output {names = ["loss", "accuracy", "grad_norm"]} %[[LOSS]], %[[ACC]], %[[NORM]] : tensor<f32>, tensor<f32>, tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.model @eval_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels" : tensor<4x2xf32>
// CHECK-NEXT: %[[W:.*]] = graph.input "sample_weight" : tensor<4xf32>
// CHECK-NEXT: %[[MW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: graph.read_variable @"dense/kernel"
// CHECK-NEXT: graph.dense %[[X]]
// CHECK-NEXT: graph.read_variable @"dense/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.read_variable @"dense_1/kernel"
// CHECK-NEXT: graph.dense
// CHECK-NEXT: graph.read_variable @"dense_1/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: %[[Y5:.*]] = graph.softmax
// CHECK-NEXT: %[[LOSS:.*]] = graph.categorical_crossentropy %[[Y5]], %[[LABELS]] weights %[[W]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC:.*]] = graph.accuracy %[[Y5]], %[[LABELS]] weights %[[MW]] : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: graph.output {names = ["loss", "accuracy", "predictions"]} %[[LOSS]], %[[ACC]], %[[Y5]] : tensor<f32>, tensor<f32>, tensor<4x2xf32>
// CHECK-NEXT: }
// The prediction step: the inference pass alone, no labels.
// CHECK-NEXT: graph.model @predict_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: graph.read_variable @"dense/kernel"
// CHECK-NEXT: graph.dense %[[X]]
// CHECK-NEXT: graph.read_variable @"dense/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: graph.relu
// CHECK-NEXT: graph.read_variable @"dense_1/kernel"
// CHECK-NEXT: graph.dense
// CHECK-NEXT: graph.read_variable @"dense_1/bias"
// CHECK-NEXT: graph.bias_add
// CHECK-NEXT: %[[P5:.*]] = graph.softmax
// CHECK-NEXT: graph.output {names = ["predictions"]} %[[P5]] : tensor<4x2xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"dense_1/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense_1/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k0 = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k0 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b0 = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b0 : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.relu %1 : tensor<4x2xf32>
  %k1 = graph.read_variable @"dense_1/kernel" : tensor<2x2xf32>
  %3 = graph.dense %2, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %b1 = graph.read_variable @"dense_1/bias" : tensor<2xf32>
  %4 = graph.bias_add %3, %b1 : tensor<4x2xf32>, tensor<2xf32>
  %5 = graph.softmax %4 : tensor<4x2xf32>
  graph.output %5 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4

// -----

// SGD with Nesterov momentum keeps one slot, "momentum".

// CHECK-LABEL: graph.variable @"nesterov/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"nesterov/kernel/momentum" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"nesterov/bias" : tensor<2xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @"nesterov/bias/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// CHECK: graph.model @train_step {
// CHECK: %[[S:.*]] = graph.sigmoid
// CHECK: %[[D3:.*]] = graph.softmax_grad
// CHECK-NEXT: %[[D2:.*]] = graph.sigmoid_grad %[[D3]], %[[S]] : tensor<4x2xf32>
// CHECK-NEXT: %[[DB:.*]] = graph.bias_add_grad %[[D2]]
// CHECK-NEXT: %[[DK:.*]] = graph.dense_grad_kernel %{{.*}}, %[[D2]]
// CHECK-NEXT: %[[MB:.*]] = graph.read_variable @"nesterov/bias/momentum" : tensor<2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[NS:[a-z_0-9]+]] = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = true> params(%{{.*}} : tensor<2xf32>) grads(%[[DB]] : tensor<2xf32>) slots(%[[MB]] : tensor<2xf32>) -> (tensor<2xf32>), (tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"nesterov/bias", %[[P]] : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"nesterov/bias/momentum", %[[NS]] : tensor<2xf32>
// CHECK-NEXT: %[[MK:.*]] = graph.read_variable @"nesterov/kernel/momentum" : tensor<3x2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[NS:[a-z_0-9]+]] = graph.optimizer_update #graph.sgd<{{.*}}> params(%{{.*}} : tensor<3x2xf32>) grads(%[[DK]] : tensor<3x2xf32>) slots(%[[MK]] : tensor<3x2xf32>)
// CHECK-NEXT: graph.assign_variable @"nesterov/kernel", %[[P]] : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"nesterov/kernel/momentum", %[[NS]] : tensor<3x2xf32>
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
graph.variable @"nesterov/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"nesterov/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"nesterov/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"nesterov/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.sigmoid %1 : tensor<4x2xf32>
  %3 = graph.softmax %2 : tensor<4x2xf32>
  graph.output %3 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = true> global_batch_size = 4

// -----

// Plain SGD keeps no slot: no slot variable, an update with empty slots. No
// metrics: the loss is the only output.

// CHECK-LABEL: graph.variable @"plain/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.model @m {
// CHECK-NOT: graph.variable
// CHECK: graph.model @train_step {
// CHECK: %[[LOSS:.*]] = graph.categorical_crossentropy
// CHECK-NEXT: graph.categorical_crossentropy_grad
// CHECK-NEXT: %[[D1:.*]] = graph.softmax_grad
// CHECK-NEXT: %[[D0:.*]] = graph.tanh_grad %[[D1]], %{{.*}} : tensor<4x2xf32>
// CHECK-NEXT: %[[DK:.*]] = graph.dense_grad_kernel %{{.*}}, %[[D0]]
// CHECK-NEXT: %[[P:.*]] = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> params(%{{.*}} : tensor<3x2xf32>) grads(%[[DK]] : tensor<3x2xf32>) slots() -> (tensor<3x2xf32>){{$}}
// CHECK-NEXT: graph.assign_variable @"plain/kernel", %[[P]] : tensor<3x2xf32>
// CHECK-NEXT: %[[NORM:.*]] = graph.global_norm %[[DK]] : tensor<3x2xf32> -> tensor<f32>
// CHECK-NEXT: graph.output {names = ["loss", "grad_norm"]} %[[LOSS]], %[[NORM]] : tensor<f32>, tensor<f32>
// CHECK: graph.model @eval_step {
// CHECK: %[[LOSS:.*]] = graph.categorical_crossentropy
// CHECK-NEXT: graph.output {names = ["loss", "predictions"]} %[[LOSS]], %{{.*}} : tensor<f32>, tensor<4x2xf32>
graph.variable @"plain/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"plain/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.tanh %0 : tensor<4x2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// Centered RMSprop with momentum: slots rms, momentum, mg, in that order.

// CHECK-LABEL: graph.variable @"rms/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"rms/kernel/rms" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"rms/kernel/momentum" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"rms/kernel/mg" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
// CHECK: graph.model @train_step {
// CHECK: %[[DK:.*]] = graph.dense_grad_kernel
// CHECK-NEXT: %[[RMS:.*]] = graph.read_variable @"rms/kernel/rms" : tensor<3x2xf32>
// CHECK-NEXT: %[[MOM:.*]] = graph.read_variable @"rms/kernel/momentum" : tensor<3x2xf32>
// CHECK-NEXT: %[[MG:.*]] = graph.read_variable @"rms/kernel/mg" : tensor<3x2xf32>
// CHECK-NEXT: %[[P:[a-z_0-9]+]], %[[S:[a-z_0-9]+]]:3 = graph.optimizer_update #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.5, epsilon = 1.0e-07, centered = true> params(%{{.*}} : tensor<3x2xf32>) grads(%[[DK]] : tensor<3x2xf32>) slots(%[[RMS]], %[[MOM]], %[[MG]] : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<3x2xf32>), (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
// CHECK-NEXT: graph.assign_variable @"rms/kernel", %[[P]] : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"rms/kernel/rms", %[[S]]#0 : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"rms/kernel/momentum", %[[S]]#1 : tensor<3x2xf32>
// CHECK-NEXT: graph.assign_variable @"rms/kernel/mg", %[[S]]#2 : tensor<3x2xf32>
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
graph.variable @"rms/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"rms/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.softmax %0 : tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.5, epsilon = 1.0e-07, centered = true> global_batch_size = 4

// -----

// A conv net: max_pool2d_grad, graph.reshape back through the flatten,
// dropout_grad with the forward's rate and seed, conv2d_grad_input into the
// second convolution's input only (nothing below the first convolution needs
// a gradient). @eval_step has no dropout.

// CHECK-LABEL: graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
// CHECK: graph.model @train_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "image" : tensor<2x8x8x1xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels" : tensor<2x3xf32>
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT: %[[C0:.*]] = graph.conv2d %[[X]], %[[K0]]
// CHECK-NEXT: %[[B0:.*]] = graph.read_variable @"conv2d/bias"
// CHECK-NEXT: %[[Y1:.*]] = graph.bias_add %[[C0]], %[[B0]]
// CHECK-NEXT: %[[R1:.*]] = graph.relu %[[Y1]]
// CHECK-NEXT: %[[K1:.*]] = graph.read_variable @"conv2d_1/kernel"
// CHECK-NEXT: %[[C1:.*]] = graph.conv2d %[[R1]], %[[K1]]
// CHECK-NEXT: %[[R2:.*]] = graph.relu %[[C1]]
// CHECK-NEXT: %[[P:.*]] = graph.max_pool2d %[[R2]]
// CHECK-NEXT: %[[F:.*]] = graph.flatten %[[P]]
// CHECK-NEXT: %[[DROP:.*]] = graph.dropout %[[F]] {rate = 5.000000e-01 : f64, seed = 42 : i64} : tensor<2x36xf32>
// CHECK-NEXT: %[[K2:.*]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT: %[[Y:.*]] = graph.dense %[[DROP]], %[[K2]]
// CHECK-NEXT: %[[PROB:.*]] = graph.softmax %[[Y]]
// CHECK-NEXT: graph.categorical_crossentropy %[[PROB]], %[[LABELS]] weights %[[TW]]
// CHECK-NEXT: graph.accuracy %[[PROB]], %[[LABELS]] weights %[[TMW]]
// CHECK-NEXT: %[[DPROB:.*]] = graph.categorical_crossentropy_grad %[[PROB]], %[[LABELS]] weights %[[TW]]
// CHECK-NEXT: %[[DY:.*]] = graph.softmax_grad %[[DPROB]], %[[PROB]]
// CHECK-NEXT: %[[DK2:.*]] = graph.dense_grad_kernel %[[DROP]], %[[DY]] : (tensor<2x36xf32>, tensor<2x3xf32>) -> tensor<36x3xf32>
// CHECK-NEXT: %[[DDROP:.*]] = graph.dense_grad_input %[[DY]], %[[K2]] : (tensor<2x3xf32>, tensor<36x3xf32>) -> tensor<2x36xf32>
// CHECK-NEXT: %[[DF:.*]] = graph.dropout_grad %[[DDROP]] {rate = 5.000000e-01 : f64, seed = 42 : i64} : tensor<2x36xf32>
// CHECK-NEXT: %[[DP:.*]] = graph.reshape %[[DF]] : tensor<2x36xf32> -> tensor<2x3x3x4xf32>
// CHECK-NEXT: %[[DR2:.*]] = graph.max_pool2d_grad %[[R2]], %[[P]], %[[DP]] pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x6x6x4xf32>, tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>) -> tensor<2x6x6x4xf32>
// CHECK-NEXT: %[[DC1:.*]] = graph.relu_grad %[[DR2]], %[[R2]]
// CHECK-NEXT: %[[DK1:.*]] = graph.conv2d_grad_kernel %[[R1]], %[[DC1]] strides = [1, 1] padding = same dilations = [1, 1] : (tensor<2x6x6x4xf32>, tensor<2x6x6x4xf32>) -> tensor<3x3x4x4xf32>
// CHECK-NEXT: %[[DR1:.*]] = graph.conv2d_grad_input %[[DC1]], %[[K1]] strides = [1, 1] padding = same dilations = [1, 1] : (tensor<2x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x6x6x4xf32>
// CHECK-NEXT: %[[DY1:.*]] = graph.relu_grad %[[DR1]], %[[R1]]
// CHECK-NEXT: %[[DB0:.*]] = graph.bias_add_grad %[[DY1]] : tensor<2x6x6x4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[DK0:.*]] = graph.conv2d_grad_kernel %[[X]], %[[DY1]] strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<2x6x6x4xf32>) -> tensor<3x3x1x4xf32>
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[K2]] : {{.*}}) grads(%[[DK2]] :
// CHECK-NEXT: graph.assign_variable @"dense/kernel"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[K1]] : {{.*}}) grads(%[[DK1]] :
// CHECK-NEXT: graph.assign_variable @"conv2d_1/kernel"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[B0]] : {{.*}}) grads(%[[DB0]] :
// CHECK-NEXT: graph.assign_variable @"conv2d/bias"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[K0]] : {{.*}}) grads(%[[DK0]] :
// CHECK-NEXT: graph.assign_variable @"conv2d/kernel"
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
// CHECK: graph.model @eval_step {
// CHECK: %[[F:.*]] = graph.flatten
// CHECK-NEXT: %[[K2:.*]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT: graph.dense %[[F]], %[[K2]]
// CHECK-NOT: graph.dropout
// CHECK: graph.output
graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.variable @"conv2d_1/kernel" : tensor<3x3x4x4xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<36x3xf32> = #graph.init<glorot_uniform>
graph.model @cnn {
  %x = graph.input "image" : tensor<2x8x8x1xf32>
  %k0 = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  %b0 = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b0 : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  %k1 = graph.read_variable @"conv2d_1/kernel" : tensor<3x3x4x4xf32>
  %3 = graph.conv2d %2, %k1 strides = [1, 1] padding = same dilations = [1, 1] : (tensor<2x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x6x6x4xf32>
  %4 = graph.relu %3 : tensor<2x6x6x4xf32>
  %5 = graph.max_pool2d %4 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x6x6x4xf32> -> tensor<2x3x3x4xf32>
  %6 = graph.flatten %5 : tensor<2x3x3x4xf32> -> tensor<2x36xf32>
  %7 = graph.dropout %6 {rate = 0.5 : f64, seed = 42 : i64} : tensor<2x36xf32>
  %k2 = graph.read_variable @"dense/kernel" : tensor<36x3xf32>
  %8 = graph.dense %7, %k2 : (tensor<2x36xf32>, tensor<36x3xf32>) -> tensor<2x3xf32>
  %9 = graph.softmax %8 : tensor<2x3xf32>
  graph.output %9 : tensor<2x3xf32>
}
graph.training @cnn losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// Batch norm: batch_norm_train in @train_step, its gradient from the batch
// statistics, the new moving statistics assigned at the end of the step (no
// slots, no update: they are not trainable); batch_norm with the moving
// statistics in @eval_step. The step's metric weights are the row mask that
// leaves a short batch's padding out of the statistics.

// CHECK-LABEL: graph.variable @"bn_dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"bn_dense/kernel/momentum"
// CHECK-NEXT: graph.variable @"batch_normalization/gamma" : tensor<2xf32> = #graph.init<ones>
// CHECK-NEXT: graph.variable @"batch_normalization/gamma/momentum"
// CHECK-NEXT: graph.variable @"batch_normalization/beta" : tensor<2xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @"batch_normalization/beta/momentum"
// CHECK-NEXT: graph.variable @"batch_normalization/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"batch_normalization/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
// CHECK-NEXT: graph.variable @"bn_head/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"bn_head/kernel/momentum"
// CHECK-NEXT: graph.model @m {
// CHECK: graph.model @train_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer"
// CHECK-NEXT: graph.input "labels"
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"bn_dense/kernel"
// CHECK-NEXT: %[[Y0:.*]] = graph.dense %[[X]], %[[K0]]
// CHECK-NEXT: %[[G:.*]] = graph.read_variable @"batch_normalization/gamma"
// CHECK-NEXT: %[[B:.*]] = graph.read_variable @"batch_normalization/beta"
// CHECK-NEXT: %[[MM:.*]] = graph.read_variable @"batch_normalization/moving_mean"
// CHECK-NEXT: %[[MV:.*]] = graph.read_variable @"batch_normalization/moving_variance"
// CHECK-NEXT: %[[BN:[a-z_0-9]+]], %[[MEAN:[a-z_0-9]+]], %[[INVSTD:[a-z_0-9]+]], %[[NEWMM:[a-z_0-9]+]], %[[NEWMV:[a-z_0-9]+]] = graph.batch_norm_train %[[Y0]], %[[MM]], %[[MV]] gamma %[[G]] beta %[[B]] row_mask %[[TMW]] {epsilon = 1.000000e-03 : f64, momentum = 0.98999999999999999 : f64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[BN]]
// CHECK: %[[DR:.*]] = graph.dense_grad_input
// CHECK-NEXT: %[[DBN:.*]] = graph.relu_grad %[[DR]], %[[R]]
// CHECK-NEXT: %[[DY0:[a-z_0-9]+]], %[[DG:[a-z_0-9]+]], %[[DB:[a-z_0-9]+]] = graph.batch_norm_grad %[[DBN]], %[[Y0]], %[[MEAN]], %[[INVSTD]] gamma %[[G]] row_mask %[[TMW]] : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[DK0:.*]] = graph.dense_grad_kernel %[[X]], %[[DY0]]
// CHECK-NEXT: graph.read_variable @"bn_head/kernel/momentum"
// CHECK-NEXT: graph.optimizer_update
// CHECK-NEXT: graph.assign_variable @"bn_head/kernel",
// CHECK-NEXT: graph.assign_variable @"bn_head/kernel/momentum",
// CHECK-NEXT: graph.read_variable @"batch_normalization/gamma/momentum"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[G]] : tensor<2xf32>) grads(%[[DG]] : tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"batch_normalization/gamma",
// CHECK-NEXT: graph.assign_variable @"batch_normalization/gamma/momentum",
// CHECK-NEXT: graph.read_variable @"batch_normalization/beta/momentum"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[B]] : tensor<2xf32>) grads(%[[DB]] : tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"batch_normalization/beta",
// CHECK-NEXT: graph.assign_variable @"batch_normalization/beta/momentum",
// CHECK-NEXT: graph.read_variable @"bn_dense/kernel/momentum"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[K0]] : tensor<3x2xf32>) grads(%[[DK0]] : tensor<3x2xf32>)
// CHECK-NEXT: graph.assign_variable @"bn_dense/kernel",
// CHECK-NEXT: graph.assign_variable @"bn_dense/kernel/momentum",
// CHECK-NEXT: graph.assign_variable @"batch_normalization/moving_mean", %[[NEWMM]] : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"batch_normalization/moving_variance", %[[NEWMV]] : tensor<2xf32>
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
// CHECK: graph.model @eval_step {
// CHECK-NOT: batch_norm_train
// CHECK: %[[G:.*]] = graph.read_variable @"batch_normalization/gamma"
// CHECK-NEXT: %[[B:.*]] = graph.read_variable @"batch_normalization/beta"
// CHECK-NEXT: %[[MM:.*]] = graph.read_variable @"batch_normalization/moving_mean"
// CHECK-NEXT: %[[MV:.*]] = graph.read_variable @"batch_normalization/moving_variance"
// CHECK-NEXT: graph.batch_norm %{{.*}}, %[[MM]], %[[MV]] gamma %[[G]] beta %[[B]] : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NOT: graph.assign_variable
// CHECK: graph.output
graph.variable @"bn_dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"batch_normalization/gamma" : tensor<2xf32> = #graph.init<ones>
graph.variable @"batch_normalization/beta" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"batch_normalization/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.variable @"bn_head/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k0 = graph.read_variable @"bn_dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k0 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %g = graph.read_variable @"batch_normalization/gamma" : tensor<2xf32>
  %b = graph.read_variable @"batch_normalization/beta" : tensor<2xf32>
  %mm = graph.read_variable @"batch_normalization/moving_mean" : tensor<2xf32>
  %mv = graph.read_variable @"batch_normalization/moving_variance" : tensor<2xf32>
  %1 = graph.batch_norm %0, %mm, %mv gamma %g beta %b : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2 = graph.relu %1 : tensor<4x2xf32>
  %k1 = graph.read_variable @"bn_head/kernel" : tensor<2x2xf32>
  %3 = graph.dense %2, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %4 = graph.softmax %3 : tensor<4x2xf32>
  graph.output %4 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> global_batch_size = 4

// -----

// Sparse categorical cross-entropy on logits: labels are class indices
// tensor<4xi32>; from_logits reaches the loss and its gradient, which feeds
// the bias_add directly (no softmax). Adam with amsgrad keeps m, v, vhat.

// CHECK-LABEL: graph.variable @"logits/kernel" : tensor<3x5xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"logits/kernel/m"
// CHECK-NEXT: graph.variable @"logits/kernel/v"
// CHECK-NEXT: graph.variable @"logits/kernel/vhat"
// CHECK: graph.model @train_step {
// CHECK-NEXT: graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels" : tensor<4xi32>
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK: %[[LOGITS:.*]] = graph.bias_add
// CHECK-NEXT: %[[LOSS:.*]] = graph.sparse_categorical_crossentropy %[[LOGITS]], %[[LABELS]] weights %[[TW]] from_logits : tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC:.*]] = graph.accuracy %[[LOGITS]], %[[LABELS]] weights %[[TMW]] : tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: %[[D:.*]] = graph.sparse_categorical_crossentropy_grad %[[LOGITS]], %[[LABELS]] weights %[[TW]] from_logits : tensor<4x5xf32>, tensor<4xi32>, tensor<4xf32> -> tensor<4x5xf32>
// CHECK-NEXT: graph.bias_add_grad %[[D]] : tensor<4x5xf32> -> tensor<5xf32>
// CHECK-NEXT: graph.dense_grad_kernel %{{.*}}, %[[D]]
// CHECK-NEXT: graph.read_variable @"logits/bias/m"
// CHECK-NEXT: graph.read_variable @"logits/bias/v"
// CHECK-NEXT: graph.read_variable @"logits/bias/vhat"
// CHECK-NEXT: graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = true>
// CHECK: graph.output {names = ["loss", "accuracy", "grad_norm"]} %[[LOSS]], %[[ACC]], %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>
// CHECK: graph.model @eval_step {
// CHECK-NEXT: graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT: %[[LABELS:.*]] = graph.input "labels" : tensor<4xi32>
// CHECK-NEXT: %[[W:.*]] = graph.input "sample_weight" : tensor<4xf32>
// CHECK-NEXT: %[[MW:.*]] = graph.input "metric_weight"
// CHECK: graph.sparse_categorical_crossentropy %{{.*}}, %[[LABELS]] weights %[[W]] from_logits
graph.variable @"logits/kernel" : tensor<3x5xf32> = #graph.init<glorot_uniform>
graph.variable @"logits/bias" : tensor<5xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"logits/kernel" : tensor<3x5xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %b = graph.read_variable @"logits/bias" : tensor<5xf32>
  %1 = graph.bias_add %0, %b : tensor<4x5xf32>, tensor<5xf32>
  graph.output %1 : tensor<4x5xf32>
}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, from_logits = true, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = true> global_batch_size = 4

// -----

// Residual Add and Concatenate: the add passes its gradient to both inputs,
// the concatenate slices it (axis -1 normalised to 3, offsets 0 and 2), and
// the relu output, used three times, sums its three gradients with one
// graph.add as soon as the last one is produced.

// CHECK-LABEL: graph.variable @"conv_a/kernel" : tensor<3x3x3x2xf32> = #graph.init<glorot_uniform>
// CHECK: graph.model @train_step {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer"
// CHECK-NEXT: graph.input "labels"
// CHECK-NEXT: %[[TW:.*]] = graph.input "sample_weight"
// CHECK-NEXT: %[[TMW:.*]] = graph.input "metric_weight"
// CHECK-NEXT: %[[KA:.*]] = graph.read_variable @"conv_a/kernel"
// CHECK-NEXT: %[[A:.*]] = graph.conv2d %[[X]], %[[KA]]
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[A]]
// CHECK-NEXT: %[[KB:.*]] = graph.read_variable @"conv_b/kernel"
// CHECK-NEXT: graph.conv2d %[[R]], %[[KB]]
// CHECK-NEXT: %[[KC:.*]] = graph.read_variable @"conv_c/kernel"
// CHECK-NEXT: graph.conv2d %[[R]], %[[KC]]
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.concatenate
// CHECK-NEXT: %[[POOLED:.*]] = graph.global_avg_pool2d
// CHECK: %[[DPOOLED:.*]] = graph.dense_grad_input
// CHECK-NEXT: %[[DCAT:.*]] = graph.global_avg_pool2d_grad %[[DPOOLED]] : tensor<2x4xf32> -> tensor<2x4x4x4xf32>
// CHECK-NEXT: %[[DSUM:.*]] = graph.slice %[[DCAT]] axis = 3 offset = 0 : tensor<2x4x4x4xf32> -> tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[DR0:.*]] = graph.slice %[[DCAT]] axis = 3 offset = 2 : tensor<2x4x4x4xf32> -> tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[DKC:.*]] = graph.conv2d_grad_kernel %[[R]], %[[DSUM]]
// CHECK-NEXT: %[[DR1:.*]] = graph.conv2d_grad_input %[[DSUM]], %[[KC]]
// CHECK-NEXT: %[[DKB:.*]] = graph.conv2d_grad_kernel %[[R]], %[[DSUM]]
// CHECK-NEXT: %[[DR2:.*]] = graph.conv2d_grad_input %[[DSUM]], %[[KB]]
// CHECK-NEXT: %[[DR:.*]] = graph.add %[[DR0]], %[[DR1]], %[[DR2]] : tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[DA:.*]] = graph.relu_grad %[[DR]], %[[R]]
// CHECK-NEXT: %[[DKA:.*]] = graph.conv2d_grad_kernel %[[X]], %[[DA]]
// CHECK-NEXT: graph.optimizer_update {{.*}} grads(%{{.*}} : tensor<4x3xf32>)
// CHECK-NEXT: graph.assign_variable @"dense/kernel"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[KC]] : {{.*}}) grads(%[[DKC]] :
// CHECK-NEXT: graph.assign_variable @"conv_c/kernel"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[KB]] : {{.*}}) grads(%[[DKB]] :
// CHECK-NEXT: graph.assign_variable @"conv_b/kernel"
// CHECK-NEXT: graph.optimizer_update {{.*}} params(%[[KA]] : {{.*}}) grads(%[[DKA]] :
// CHECK-NEXT: graph.assign_variable @"conv_a/kernel"
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
graph.variable @"conv_a/kernel" : tensor<3x3x3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"conv_b/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"conv_c/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<4x3xf32> = #graph.init<glorot_uniform>
graph.model @residual {
  %x = graph.input "input_layer" : tensor<2x4x4x3xf32>
  %ka = graph.read_variable @"conv_a/kernel" : tensor<3x3x3x2xf32>
  %0 = graph.conv2d %x, %ka strides = [1, 1] padding = same dilations = [1, 1] : (tensor<2x4x4x3xf32>, tensor<3x3x3x2xf32>) -> tensor<2x4x4x2xf32>
  %1 = graph.relu %0 : tensor<2x4x4x2xf32>
  %kb = graph.read_variable @"conv_b/kernel" : tensor<1x1x2x2xf32>
  %2 = graph.conv2d %1, %kb strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<2x4x4x2xf32>
  %kc = graph.read_variable @"conv_c/kernel" : tensor<1x1x2x2xf32>
  %3 = graph.conv2d %1, %kc strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<2x4x4x2xf32>
  %4 = graph.add %2, %3 : tensor<2x4x4x2xf32>
  %5 = graph.concatenate %4, %1 axis = -1 : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x4xf32>
  %6 = graph.global_avg_pool2d %5 : tensor<2x4x4x4xf32> -> tensor<2x4xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<4x3xf32>
  %7 = graph.dense %6, %kd : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %8 = graph.softmax %7 : tensor<2x3xf32>
  graph.output %8 : tensor<2x3xf32>
}
graph.training @residual losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2

// -----

// A shared layer reads its kernel twice: the variable's gradient is the sum
// of both reads' gradients, and the update uses the first read.

// CHECK-LABEL: graph.variable @"shared/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
// CHECK: graph.model @train_step {
// CHECK: %[[K0:.*]] = graph.read_variable @"shared/kernel"
// CHECK: %[[K1:.*]] = graph.read_variable @"shared/kernel"
// CHECK: %[[D1:.*]] = graph.dense_grad_kernel
// CHECK-NEXT: graph.dense_grad_input %{{.*}}, %[[K1]]
// CHECK-NEXT: graph.relu_grad
// CHECK-NEXT: %[[D0:.*]] = graph.dense_grad_kernel
// CHECK-NEXT: %[[D:.*]] = graph.add %[[D1]], %[[D0]] : tensor<2x2xf32>
// CHECK-NEXT: %[[P:.*]] = graph.optimizer_update {{.*}} params(%[[K0]] : tensor<2x2xf32>) grads(%[[D]] : tensor<2x2xf32>)
// CHECK-NEXT: graph.assign_variable @"shared/kernel", %[[P]]
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
graph.variable @"shared/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x2xf32>
  %k0 = graph.read_variable @"shared/kernel" : tensor<2x2xf32>
  %0 = graph.dense %x, %k0 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %1 = graph.relu %0 : tensor<4x2xf32>
  %k1 = graph.read_variable @"shared/kernel" : tensor<2x2xf32>
  %2 = graph.dense %1, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %3 = graph.softmax %2 : tensor<4x2xf32>
  graph.output %3 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4

// -----

// A frozen layer between two trainable ones: the gradient flows through it
// (dense_grad_input with the frozen kernel) but it gets no kernel or bias
// gradient, no slots and no update.

// CHECK-LABEL: graph.variable @"first/kernel" : tensor<3x4xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"first/kernel/m"
// CHECK-NEXT: graph.variable @"first/kernel/v"
// CHECK-NEXT: graph.variable @"frozen/kernel" : tensor<4x4xf32> = #graph.init<glorot_uniform> {trainable = false}
// CHECK-NEXT: graph.variable @"frozen/bias" : tensor<4xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @"last/kernel" : tensor<4x2xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"last/kernel/m"
// CHECK-NEXT: graph.variable @"last/kernel/v"
// CHECK-NEXT: graph.model @m {
// CHECK: graph.model @train_step {
// CHECK: %[[KF:.*]] = graph.read_variable @"frozen/kernel"
// CHECK: %[[R:.*]] = graph.relu
// CHECK-NEXT: %[[KL:.*]] = graph.read_variable @"last/kernel"
// CHECK: graph.softmax_grad
// CHECK-NEXT: %[[DKL:.*]] = graph.dense_grad_kernel %[[R]],
// CHECK-NEXT: %[[DR:.*]] = graph.dense_grad_input %{{.*}}, %[[KL]]
// CHECK-NEXT: %[[DB:.*]] = graph.relu_grad %[[DR]], %[[R]]
// CHECK-NEXT: %[[DF:.*]] = graph.dense_grad_input %[[DB]], %[[KF]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[D0:.*]] = graph.relu_grad %[[DF]],
// CHECK-NEXT: %[[DK0:.*]] = graph.dense_grad_kernel %{{.*}}, %[[D0]] : (tensor<4x3xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: graph.read_variable @"last/kernel/m"
// CHECK-NEXT: graph.read_variable @"last/kernel/v"
// CHECK-NEXT: graph.optimizer_update {{.*}} grads(%[[DKL]] :
// CHECK-NEXT: graph.assign_variable @"last/kernel",
// CHECK-NEXT: graph.assign_variable @"last/kernel/m",
// CHECK-NEXT: graph.assign_variable @"last/kernel/v",
// CHECK-NEXT: graph.read_variable @"first/kernel/m"
// CHECK-NEXT: graph.read_variable @"first/kernel/v"
// CHECK-NEXT: graph.optimizer_update {{.*}} grads(%[[DK0]] :
// CHECK-NEXT: graph.assign_variable @"first/kernel",
// CHECK-NEXT: graph.assign_variable @"first/kernel/m",
// CHECK-NEXT: graph.assign_variable @"first/kernel/v",
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
graph.variable @"first/kernel" : tensor<3x4xf32> = #graph.init<glorot_uniform>
graph.variable @"frozen/kernel" : tensor<4x4xf32> = #graph.init<glorot_uniform> {trainable = false}
graph.variable @"frozen/bias" : tensor<4xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"last/kernel" : tensor<4x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k0 = graph.read_variable @"first/kernel" : tensor<3x4xf32>
  %0 = graph.dense %x, %k0 : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
  %1 = graph.relu %0 : tensor<4x4xf32>
  %k1 = graph.read_variable @"frozen/kernel" : tensor<4x4xf32>
  %2 = graph.dense %1, %k1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b1 = graph.read_variable @"frozen/bias" : tensor<4xf32>
  %3 = graph.bias_add %2, %b1 : tensor<4x4xf32>, tensor<4xf32>
  %4 = graph.relu %3 : tensor<4x4xf32>
  %k2 = graph.read_variable @"last/kernel" : tensor<4x2xf32>
  %5 = graph.dense %4, %k2 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %6 = graph.softmax %5 : tensor<4x2xf32>
  graph.output %6 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4

// -----

// A frozen base (dense and batch norm with trainable = false) under a
// trainable head: nothing is computed below the head (no dense_grad_input,
// no dropout_grad); the frozen batch norm runs in inference mode in training
// too, as Keras runs a BatchNormalization layer with trainable = False, so
// its moving statistics are not updated.

// CHECK-LABEL: graph.variable @"base/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform> {trainable = false}
// CHECK: graph.model @train_step {
// CHECK-NOT: batch_norm_train
// CHECK: graph.batch_norm
// CHECK-NEXT: %[[DROP:.*]] = graph.dropout
// CHECK-NEXT: graph.read_variable @"head/kernel"
// CHECK: graph.softmax_grad
// CHECK-NEXT: %[[DK:.*]] = graph.dense_grad_kernel %[[DROP]],
// CHECK-NEXT: graph.read_variable @"head/kernel/m"
// CHECK-NEXT: graph.read_variable @"head/kernel/v"
// CHECK-NEXT: graph.optimizer_update {{.*}} grads(%[[DK]] :
// CHECK-NEXT: graph.assign_variable @"head/kernel",
// CHECK-NEXT: graph.assign_variable @"head/kernel/m",
// CHECK-NEXT: graph.assign_variable @"head/kernel/v",
// CHECK-NEXT: graph.global_norm
// CHECK-NEXT: graph.output
// CHECK: graph.model @eval_step {
graph.variable @"base/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform> {trainable = false}
graph.variable @"bn/gamma" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.variable @"bn/beta" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.variable @"head/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k0 = graph.read_variable @"base/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k0 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %g = graph.read_variable @"bn/gamma" : tensor<2xf32>
  %b = graph.read_variable @"bn/beta" : tensor<2xf32>
  %mm = graph.read_variable @"bn/moving_mean" : tensor<2xf32>
  %mv = graph.read_variable @"bn/moving_variance" : tensor<2xf32>
  %1 = graph.batch_norm %0, %mm, %mv gamma %g beta %b : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2 = graph.dropout %1 {rate = 0.25 : f64, seed = 7 : i64} : tensor<4x2xf32>
  %k1 = graph.read_variable @"head/kernel" : tensor<2x2xf32>
  %3 = graph.dense %2, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %4 = graph.softmax %3 : tensor<4x2xf32>
  graph.output %4 : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4

// -----

// The remaining rules: elu, sigmoid and tanh from the forward output,
// leaky_relu and gelu from the forward input, avg_pool2d_grad, reshape back to
// the input shape, softmax_grad with the forward axis.

// CHECK-LABEL: graph.variable @"act_conv/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>
// CHECK: graph.model @train_step {
// CHECK: %[[X:.*]] = graph.input "input_layer"
// CHECK: %[[C:.*]] = graph.conv2d
// CHECK-NEXT: %[[ELU:.*]] = graph.elu %[[C]] {alpha = 5.000000e-01 : f64}
// CHECK-NEXT: %[[POOL:.*]] = graph.avg_pool2d %[[ELU]]
// CHECK-NEXT: %[[LEAKY:.*]] = graph.leaky_relu %[[POOL]] {alpha = 1.000000e-01 : f64}
// CHECK-NEXT: %[[GELU:.*]] = graph.gelu %[[LEAKY]] {approximate}
// CHECK-NEXT: %[[FLAT:.*]] = graph.reshape %[[GELU]]
// CHECK-NEXT: %[[TANH:.*]] = graph.tanh %[[FLAT]]
// CHECK-NEXT: graph.read_variable @"act_dense/kernel"
// CHECK-NEXT: graph.dense
// CHECK-NEXT: %[[SIG:.*]] = graph.sigmoid
// CHECK-NEXT: %[[SOFT:.*]] = graph.softmax %[[SIG]] {axis = 1 : i64}
// CHECK: %[[D0:.*]] = graph.categorical_crossentropy_grad
// CHECK-NEXT: %[[D1:.*]] = graph.softmax_grad %[[D0]], %[[SOFT]] {axis = 1 : i64} : tensor<2x3xf32>
// CHECK-NEXT: %[[D2:.*]] = graph.sigmoid_grad %[[D1]], %[[SIG]] : tensor<2x3xf32>
// CHECK-NEXT: graph.dense_grad_kernel %[[TANH]], %[[D2]]
// CHECK-NEXT: %[[D3:.*]] = graph.dense_grad_input %[[D2]],
// CHECK-NEXT: %[[D4:.*]] = graph.tanh_grad %[[D3]], %[[TANH]] : tensor<2x8xf32>
// CHECK-NEXT: %[[D5:.*]] = graph.reshape %[[D4]] : tensor<2x8xf32> -> tensor<2x2x2x2xf32>
// CHECK-NEXT: %[[D6:.*]] = graph.gelu_grad %[[D5]], %[[LEAKY]] {approximate} : tensor<2x2x2x2xf32>
// CHECK-NEXT: %[[D7:.*]] = graph.leaky_relu_grad %[[D6]], %[[POOL]] {alpha = 1.000000e-01 : f64} : tensor<2x2x2x2xf32>
// CHECK-NEXT: %[[D8:.*]] = graph.avg_pool2d_grad %[[D7]] pool_size = [2, 2] strides = [2, 2] padding = same : tensor<2x2x2x2xf32> -> tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[D9:.*]] = graph.elu_grad %[[D8]], %[[ELU]] {alpha = 5.000000e-01 : f64} : tensor<2x4x4x2xf32>
// CHECK-NEXT: graph.conv2d_grad_kernel %[[X]], %[[D9]]
// CHECK-NEXT: graph.optimizer_update
graph.variable @"act_conv/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"act_dense/kernel" : tensor<8x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x4x4x2xf32>
  %k0 = graph.read_variable @"act_conv/kernel" : tensor<1x1x2x2xf32>
  %0 = graph.conv2d %x, %k0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<2x4x4x2xf32>
  %1 = graph.elu %0 {alpha = 0.5 : f64} : tensor<2x4x4x2xf32>
  %2 = graph.avg_pool2d %1 pool_size = [2, 2] strides = [2, 2] padding = same : tensor<2x4x4x2xf32> -> tensor<2x2x2x2xf32>
  %3 = graph.leaky_relu %2 {alpha = 0.1 : f64} : tensor<2x2x2x2xf32>
  %4 = graph.gelu %3 {approximate} : tensor<2x2x2x2xf32>
  %5 = graph.reshape %4 : tensor<2x2x2x2xf32> -> tensor<2x8xf32>
  %6 = graph.tanh %5 : tensor<2x8xf32>
  %k1 = graph.read_variable @"act_dense/kernel" : tensor<8x3xf32>
  %7 = graph.dense %6, %k1 : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %8 = graph.sigmoid %7 : tensor<2x3xf32>
  %9 = graph.softmax %8 {axis = 1 : i64} : tensor<2x3xf32>
  graph.output %9 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2
