// RUN: graph-opt %s --split-input-file --graph-fuse | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-fuse --graph-fuse | FileCheck %s

// graph-fuse on hand-written steps in the form graph-build-training-step
// produces (docs/compiler-ir.md, section 1). The second RUN line checks that
// a second run changes nothing.

// conv2d + bias_add + relu: one fused_conv2d whose result is the relu's.

// CHECK-LABEL: graph.model @conv_bias_relu
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"conv2d/bias"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_conv2d %[[X]], %[[K]] bias %[[B]] strides = [1, 1] padding = valid dilations = [1, 1] activation = relu : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>, tensor<4xf32>) -> tensor<2x6x6x4xf32>
// CHECK-NEXT:    graph.output %[[Y]] : tensor<2x6x6x4xf32>
graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.model @conv_bias_relu {
  %x = graph.input "input_layer" : tensor<2x8x8x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  %b = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  graph.output %2 : tensor<2x6x6x4xf32>
}

// -----

// A conv2d with no bias and no activation still becomes fused_conv2d
// (activation none, no bias): every convolution runs the one fused kernel.

// CHECK-LABEL: graph.model @conv_alone
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_conv2d %[[X]], %[[K]] strides = [2, 2] padding = same dilations = [1, 1] activation = none : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT:    graph.output %[[Y]]
graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.model @conv_alone {
  %x = graph.input "input_layer" : tensor<2x8x8x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k strides = [2, 2] padding = same dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x4x4x4xf32>
  graph.output %0 : tensor<2x4x4x4xf32>
}

// -----

// dense + bias_add, no activation: fused_dense with activation none.

// CHECK-LABEL: graph.model @dense_bias {
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"dense/bias"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_dense %[[X]], %[[K]] bias %[[B]] activation = none : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    graph.output %[[Y]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @dense_bias {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  graph.output %1 : tensor<4x2xf32>
}

// -----

// dense without bias (use_bias=False) + tanh: the activation fuses alone.

// CHECK-LABEL: graph.model @dense_tanh
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_dense %[[X]], %[[K]] activation = tanh : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    graph.output %[[Y]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @dense_tanh {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.tanh %0 : tensor<4x2xf32>
  graph.output %1 : tensor<4x2xf32>
}

// -----

// Softmax is not an epilogue: without a cross-entropy it stays a separate op
// after a fused_dense with activation none.

// CHECK-LABEL: graph.model @dense_bias_softmax
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"dense/bias"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_dense %[[X]], %[[K]] bias %[[B]] activation = none
// CHECK-NEXT:    %[[P:.+]] = graph.softmax %[[Y]] : tensor<4x2xf32>
// CHECK-NEXT:    graph.output %[[P]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @dense_bias_softmax {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.softmax %1 : tensor<4x2xf32>
  graph.output %2 : tensor<4x2xf32>
}

// -----

// leaky_relu is no epilogue activation: fused_dense (activation none), then
// the leaky_relu; its gradient reads the pre-activation, which is the fused
// result.

// CHECK-LABEL: graph.model @dense_bias_leaky_relu
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[DY:.+]] = graph.input "dy"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"dense/bias"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_dense %[[X]], %[[K]] bias %[[B]] activation = none
// CHECK-NEXT:    %[[A:.+]] = graph.leaky_relu %[[Y]] : tensor<4x2xf32>
// CHECK-NEXT:    %[[DX:.+]] = graph.leaky_relu_grad %[[DY]], %[[Y]] : tensor<4x2xf32>
// CHECK-NEXT:    graph.output %[[A]], %[[DX]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.model @dense_bias_leaky_relu {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %dy = graph.input "dy" : tensor<4x2xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.leaky_relu %1 : tensor<4x2xf32>
  %3 = graph.leaky_relu_grad %dy, %1 : tensor<4x2xf32>
  graph.output %2, %3 : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// No epilogue fusion: the pre-activation (the bias_add result) has a second
// user, so the relu stays a separate op after fused_conv2d (activation none).

// CHECK-LABEL: graph.model @pre_activation_reused
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"conv2d/bias"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_conv2d %[[X]], %[[K]] bias %[[B]] strides = [1, 1] padding = valid dilations = [1, 1] activation = none
// CHECK-NEXT:    %[[A:.+]] = graph.relu %[[Y]] : tensor<2x6x6x4xf32>
// CHECK-NEXT:    graph.output %[[A]], %[[Y]]
graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.model @pre_activation_reused {
  %x = graph.input "input_layer" : tensor<2x8x8x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  %b = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  graph.output %2, %1 : tensor<2x6x6x4xf32>, tensor<2x6x6x4xf32>
}

// -----

// No bias fusion either: the raw conv2d result has a second user, so bias_add
// and relu stay after a bare fused_conv2d.

// CHECK-LABEL: graph.model @conv_output_reused
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"conv2d/kernel"
// CHECK-NEXT:    %[[Y:.+]] = graph.fused_conv2d %[[X]], %[[K]] strides = [1, 1] padding = valid dilations = [1, 1] activation = none
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"conv2d/bias"
// CHECK-NEXT:    %[[Z:.+]] = graph.bias_add %[[Y]], %[[B]]
// CHECK-NEXT:    %[[A:.+]] = graph.relu %[[Z]] : tensor<2x6x6x4xf32>
// CHECK-NEXT:    graph.output %[[A]], %[[Y]]
graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.model @conv_output_reused {
  %x = graph.input "input_layer" : tensor<2x8x8x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  %b = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  graph.output %2, %0 : tensor<2x6x6x4xf32>, tensor<2x6x6x4xf32>
}

// -----

// The MLP train step of docs/compiler-ir.md: two fused_dense, one
// softmax_cross_entropy that replaces softmax, the loss, its gradient and
// softmax_grad (accuracy reads the probabilities, backward starts from
// logits_grad), and one multi-tensor Adam update at the last update's
// position, followed by all twelve assign_variables in their order.

// CHECK-LABEL: graph.model @train_step {
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer" : tensor<4x3xf32>
// CHECK-NEXT:    %[[LABELS:.+]] = graph.input "labels" : tensor<4x2xf32>
// CHECK-NEXT:    %[[K0:.+]] = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
// CHECK-NEXT:    %[[B0:.+]] = graph.read_variable @"dense/bias" : tensor<2xf32>
// CHECK-NEXT:    %[[H:.+]] = graph.fused_dense %[[X]], %[[K0]] bias %[[B0]] activation = relu : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[K1:.+]] = graph.read_variable @"dense_1/kernel" : tensor<2x2xf32>
// CHECK-NEXT:    %[[B1:.+]] = graph.read_variable @"dense_1/bias" : tensor<2xf32>
// CHECK-NEXT:    %[[Z:.+]] = graph.fused_dense %[[H]], %[[K1]] bias %[[B1]] activation = none : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[P:.+]], %[[LOSS:.+]], %[[DZ:.+]] = graph.softmax_cross_entropy %[[Z]], %[[LABELS]] : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
// CHECK-NEXT:    %[[ACC:.+]] = graph.accuracy %[[P]], %[[LABELS]]
// CHECK-NEXT:    %[[DB1:.+]] = graph.bias_add_grad %[[DZ]]
// CHECK-NEXT:    %[[DK1:.+]] = graph.dense_grad_kernel %[[H]], %[[DZ]]
// CHECK-NEXT:    %[[DH:.+]] = graph.dense_grad_input %[[DZ]], %[[K1]]
// CHECK-NEXT:    %[[D1:.+]] = graph.relu_grad %[[DH]], %[[H]]
// CHECK-NEXT:    %[[DB0:.+]] = graph.bias_add_grad %[[D1]]
// CHECK-NEXT:    %[[DK0:.+]] = graph.dense_grad_kernel %[[X]], %[[D1]]
// CHECK-NEXT:    %[[MB1:.+]] = graph.read_variable @"dense_1/bias/m"
// CHECK-NEXT:    %[[VB1:.+]] = graph.read_variable @"dense_1/bias/v"
// CHECK-NEXT:    %[[MK1:.+]] = graph.read_variable @"dense_1/kernel/m"
// CHECK-NEXT:    %[[VK1:.+]] = graph.read_variable @"dense_1/kernel/v"
// CHECK-NEXT:    %[[MB0:.+]] = graph.read_variable @"dense/bias/m"
// CHECK-NEXT:    %[[VB0:.+]] = graph.read_variable @"dense/bias/v"
// CHECK-NEXT:    %[[MK0:.+]] = graph.read_variable @"dense/kernel/m"
// CHECK-NEXT:    %[[VK0:.+]] = graph.read_variable @"dense/kernel/v"
// CHECK-NEXT:    %[[NP:.+]]:4, %[[NS:.+]]:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false>
// CHECK-SAME:      params(%[[B1]], %[[K1]], %[[B0]], %[[K0]] : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>)
// CHECK-SAME:      grads(%[[DB1]], %[[DK1]], %[[DB0]], %[[DK0]] : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>)
// CHECK-SAME:      slots(%[[MB1]], %[[VB1]], %[[MK1]], %[[VK1]], %[[MB0]], %[[VB0]], %[[MK0]], %[[VK0]] :
// CHECK-SAME:      -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
// CHECK-NEXT:    graph.assign_variable @"dense_1/bias", %[[NP]]#0
// CHECK-NEXT:    graph.assign_variable @"dense_1/bias/m", %[[NS]]#0
// CHECK-NEXT:    graph.assign_variable @"dense_1/bias/v", %[[NS]]#1
// CHECK-NEXT:    graph.assign_variable @"dense_1/kernel", %[[NP]]#1
// CHECK-NEXT:    graph.assign_variable @"dense_1/kernel/m", %[[NS]]#2
// CHECK-NEXT:    graph.assign_variable @"dense_1/kernel/v", %[[NS]]#3
// CHECK-NEXT:    graph.assign_variable @"dense/bias", %[[NP]]#2
// CHECK-NEXT:    graph.assign_variable @"dense/bias/m", %[[NS]]#4
// CHECK-NEXT:    graph.assign_variable @"dense/bias/v", %[[NS]]#5
// CHECK-NEXT:    graph.assign_variable @"dense/kernel", %[[NP]]#3
// CHECK-NEXT:    graph.assign_variable @"dense/kernel/m", %[[NS]]#6
// CHECK-NEXT:    graph.assign_variable @"dense/kernel/v", %[[NS]]#7
// CHECK-NEXT:    graph.output %[[LOSS]], %[[ACC]] : tensor<f32>, tensor<f32>
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"dense_1/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense_1/bias" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"dense/kernel/m" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense/kernel/v" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense/bias/m" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense/bias/v" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense_1/kernel/m" : tensor<2x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense_1/kernel/v" : tensor<2x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense_1/bias/m" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense_1/bias/v" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
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
  %loss = graph.categorical_crossentropy %5, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %acc = graph.accuracy %5, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %d5 = graph.categorical_crossentropy_grad %5, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %d4 = graph.softmax_grad %d5, %5 : tensor<4x2xf32>
  %db1 = graph.bias_add_grad %d4 : tensor<4x2xf32> -> tensor<2xf32>
  %dk1 = graph.dense_grad_kernel %2, %d4 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %d2 = graph.dense_grad_input %d4, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %d1 = graph.relu_grad %d2, %2 : tensor<4x2xf32>
  %db0 = graph.bias_add_grad %d1 : tensor<4x2xf32> -> tensor<2xf32>
  %dk0 = graph.dense_grad_kernel %x, %d1 : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %mb1 = graph.read_variable @"dense_1/bias/m" : tensor<2xf32>
  %vb1 = graph.read_variable @"dense_1/bias/v" : tensor<2xf32>
  %pb1, %sb1:2 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1 : tensor<2xf32>) grads(%db1 : tensor<2xf32>) slots(%mb1, %vb1 : tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
  graph.assign_variable @"dense_1/bias", %pb1 : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/m", %sb1#0 : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %sb1#1 : tensor<2xf32>
  %mk1 = graph.read_variable @"dense_1/kernel/m" : tensor<2x2xf32>
  %vk1 = graph.read_variable @"dense_1/kernel/v" : tensor<2x2xf32>
  %pk1, %sk1:2 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%k1 : tensor<2x2xf32>) grads(%dk1 : tensor<2x2xf32>) slots(%mk1, %vk1 : tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2xf32>), (tensor<2x2xf32>, tensor<2x2xf32>)
  graph.assign_variable @"dense_1/kernel", %pk1 : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/m", %sk1#0 : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %sk1#1 : tensor<2x2xf32>
  %mb0 = graph.read_variable @"dense/bias/m" : tensor<2xf32>
  %vb0 = graph.read_variable @"dense/bias/v" : tensor<2xf32>
  %pb0, %sb0:2 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b0 : tensor<2xf32>) grads(%db0 : tensor<2xf32>) slots(%mb0, %vb0 : tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
  graph.assign_variable @"dense/bias", %pb0 : tensor<2xf32>
  graph.assign_variable @"dense/bias/m", %sb0#0 : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %sb0#1 : tensor<2xf32>
  %mk0 = graph.read_variable @"dense/kernel/m" : tensor<3x2xf32>
  %vk0 = graph.read_variable @"dense/kernel/v" : tensor<3x2xf32>
  %pk0, %sk0:2 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%k0 : tensor<3x2xf32>) grads(%dk0 : tensor<3x2xf32>) slots(%mk0, %vk0 : tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<3x2xf32>), (tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense/kernel", %pk0 : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/m", %sk0#0 : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %sk0#1 : tensor<3x2xf32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// Sparse labels: sparse_categorical_crossentropy and its gradient fuse the
// same way. SGD without momentum keeps no slots: the merged update has none
// (and prints no slot result list). The input is in the generic form.

// CHECK-LABEL: graph.model @train_step_sparse
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[LABELS:.+]] = graph.input "labels" : tensor<4xi32>
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @"dense/bias"
// CHECK-NEXT:    %[[Z:.+]] = graph.fused_dense %[[X]], %[[K]] bias %[[B]] activation = none
// CHECK-NEXT:    %[[P:.+]], %[[LOSS:.+]], %[[DZ:.+]] = graph.softmax_cross_entropy %[[Z]], %[[LABELS]] : tensor<4x5xf32>, tensor<4xi32> -> tensor<4x5xf32>, tensor<f32>, tensor<4x5xf32>
// CHECK-NEXT:    %[[ACC:.+]] = graph.accuracy %[[P]], %[[LABELS]]
// CHECK-NEXT:    %[[DB:.+]] = graph.bias_add_grad %[[DZ]]
// CHECK-NEXT:    %[[DK:.+]] = graph.dense_grad_kernel %[[X]], %[[DZ]]
// CHECK-NEXT:    %[[NP:.+]]:2 = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> params(%[[B]], %[[K]] : tensor<5xf32>, tensor<3x5xf32>) grads(%[[DB]], %[[DK]] : tensor<5xf32>, tensor<3x5xf32>) slots() -> (tensor<5xf32>, tensor<3x5xf32>)
// CHECK-NEXT:    graph.assign_variable @"dense/bias", %[[NP]]#0
// CHECK-NEXT:    graph.assign_variable @"dense/kernel", %[[NP]]#1
// CHECK-NEXT:    graph.output %[[LOSS]], %[[ACC]]
graph.variable @"dense/kernel" : tensor<3x5xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<5xf32> = #graph.init<zeros>
graph.model @train_step_sparse {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4xi32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x5xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %b = graph.read_variable @"dense/bias" : tensor<5xf32>
  %1 = graph.bias_add %0, %b : tensor<4x5xf32>, tensor<5xf32>
  %2 = graph.softmax %1 {axis = 1 : i64} : tensor<4x5xf32>
  %loss = graph.sparse_categorical_crossentropy %2, %labels : tensor<4x5xf32>, tensor<4xi32> -> tensor<f32>
  %acc = graph.accuracy %2, %labels : tensor<4x5xf32>, tensor<4xi32> -> tensor<f32>
  %d2 = graph.sparse_categorical_crossentropy_grad %2, %labels : tensor<4x5xf32>, tensor<4xi32> -> tensor<4x5xf32>
  %d1 = graph.softmax_grad %d2, %2 : tensor<4x5xf32>
  %db = graph.bias_add_grad %d1 : tensor<4x5xf32> -> tensor<5xf32>
  %dk = graph.dense_grad_kernel %x, %d1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %pb = "graph.optimizer_update"(%b, %db) <{optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0>}> : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  graph.assign_variable @"dense/bias", %pb : tensor<5xf32>
  %pk = "graph.optimizer_update"(%k, %dk) <{optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0>}> : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  graph.assign_variable @"dense/kernel", %pk : tensor<3x5xf32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// Under a LossScaleOptimizer the loss gradient is scaled before softmax_grad:
// the fusion happens all the same, and the scale moves onto logits_grad (it
// is linear), so training takes the logits as evaluation does.

// CHECK-LABEL: graph.model @train_step_loss_scaled
// CHECK:         %[[SCALE:.+]] = graph.read_variable @"optimizer/dynamic_scale"
// CHECK:         %[[P:.+]], %[[LOSS:.+]], %[[DZ:.+]] = graph.softmax_cross_entropy %[[Z:.+]], %[[LABELS:.+]] :
// CHECK-NEXT:    %[[SDZ:.+]] = graph.scale_by %[[DZ]], %[[SCALE]] {replicas = 2 : i64}
// CHECK-NEXT:    %[[DB:.+]] = graph.bias_add_grad %[[SDZ]]
// CHECK-NOT:     graph.softmax_grad
// CHECK-NOT:     graph.sparse_categorical_crossentropy
graph.variable @"dense/kernel" : tensor<3x5xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<5xf32> = #graph.init<zeros>
graph.variable @"optimizer/dynamic_scale" : tensor<f32> = #graph.init<zeros>
graph.model @train_step_loss_scaled {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4xi32>
  %scale = graph.read_variable @"optimizer/dynamic_scale" : tensor<f32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x5xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %b = graph.read_variable @"dense/bias" : tensor<5xf32>
  %1 = graph.bias_add %0, %b : tensor<4x5xf32>, tensor<5xf32>
  %2 = graph.softmax %1 {axis = 1 : i64} : tensor<4x5xf32>
  %loss = graph.sparse_categorical_crossentropy %2, %labels : tensor<4x5xf32>, tensor<4xi32> -> tensor<f32>
  %d3 = graph.sparse_categorical_crossentropy_grad %2, %labels : tensor<4x5xf32>, tensor<4xi32> -> tensor<4x5xf32>
  %d2 = graph.scale_by %d3, %scale {replicas = 2 : i64} : tensor<4x5xf32>, tensor<f32>
  %d1 = graph.softmax_grad %d2, %2 : tensor<4x5xf32>
  %db = graph.bias_add_grad %d1 : tensor<4x5xf32> -> tensor<5xf32>
  %dk = graph.dense_grad_kernel %x, %d1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  graph.output %loss, %db, %dk : tensor<f32>, tensor<5xf32>, tensor<3x5xf32>
}

// -----

// In @eval_step there is no gradient: softmax and cross-entropy still fuse,
// so evaluation computes its loss with the kernel training uses; the
// logits_grad result is left unused.

// CHECK-LABEL: graph.model @eval_step
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[LABELS:.+]] = graph.input "labels"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[Z:.+]] = graph.fused_dense %[[X]], %[[K]] activation = none
// CHECK-NEXT:    %[[P:.+]], %[[LOSS:.+]], %{{.+}} = graph.softmax_cross_entropy %[[Z]], %[[LABELS]]
// CHECK-NEXT:    %[[ACC:.+]] = graph.accuracy %[[P]], %[[LABELS]]
// CHECK-NEXT:    graph.output %[[LOSS]], %[[ACC]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.softmax %0 : tensor<4x2xf32>
  %loss = graph.categorical_crossentropy %1, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %acc = graph.accuracy %1, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// Labels defined after the softmax: the fused op goes right after them, still
// ahead of every user of its results.

// CHECK-LABEL: graph.model @labels_after_softmax
// CHECK-NEXT:    %[[Z:.+]] = graph.input "logits"
// CHECK-NEXT:    %[[LABELS:.+]] = graph.input "labels"
// CHECK-NEXT:    %[[P:.+]], %[[LOSS:.+]], %{{.+}} = graph.softmax_cross_entropy %[[Z]], %[[LABELS]]
// CHECK-NEXT:    graph.output %[[LOSS]], %[[P]]
graph.model @labels_after_softmax {
  %logits = graph.input "logits" : tensor<4x2xf32>
  %0 = graph.softmax %logits : tensor<4x2xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
  %loss = graph.categorical_crossentropy %0, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  graph.output %loss, %0 : tensor<f32>, tensor<4x2xf32>
}

// -----

// from_logits cross-entropy (no softmax): nothing to fuse with the loss.

// CHECK-LABEL: graph.model @from_logits
// CHECK-NEXT:    %[[X:.+]] = graph.input "input_layer"
// CHECK-NEXT:    %[[LABELS:.+]] = graph.input "labels"
// CHECK-NEXT:    %[[K:.+]] = graph.read_variable @"dense/kernel"
// CHECK-NEXT:    %[[Z:.+]] = graph.fused_dense %[[X]], %[[K]] activation = none
// CHECK-NEXT:    %[[LOSS:.+]] = graph.categorical_crossentropy %[[Z]], %[[LABELS]] from_logits
// CHECK-NEXT:    %[[DZ:.+]] = graph.categorical_crossentropy_grad %[[Z]], %[[LABELS]] from_logits
// CHECK-NEXT:    %[[DK:.+]] = graph.dense_grad_kernel %[[X]], %[[DZ]]
// CHECK-NEXT:    graph.output %[[LOSS]], %[[DK]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.model @from_logits {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %loss = graph.categorical_crossentropy %0, %labels from_logits : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %d0 = graph.categorical_crossentropy_grad %0, %labels from_logits : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %dk = graph.dense_grad_kernel %x, %d0 : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  graph.output %loss, %dk : tensor<f32>, tensor<3x2xf32>
}

// -----

// A softmax with a from_logits loss, a softmax over the batch axis, and a
// softmax whose probabilities feed another layer: none is the pattern.

// CHECK-LABEL: graph.model @softmax_not_fused
// CHECK-NOT:     graph.softmax_cross_entropy
// CHECK:         %[[P0:.+]] = graph.softmax %{{.+}} : tensor<4x2xf32>
// CHECK-NEXT:    graph.categorical_crossentropy %[[P0]], %{{.+}} from_logits
// CHECK-NEXT:    %[[P1:.+]] = graph.softmax %{{.+}} {axis = 0 : i64}
// CHECK-NEXT:    graph.categorical_crossentropy %[[P1]], %{{.+}} :
// CHECK-NEXT:    %[[P2:.+]] = graph.softmax %{{.+}} : tensor<4x2xf32>
// CHECK-NEXT:    graph.categorical_crossentropy %[[P2]], %{{.+}} :
// CHECK-NEXT:    graph.dropout %[[P2]]
// CHECK-NOT:     graph.softmax_cross_entropy
graph.model @softmax_not_fused {
  %logits = graph.input "logits" : tensor<4x2xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
  %0 = graph.softmax %logits : tensor<4x2xf32>
  %l0 = graph.categorical_crossentropy %0, %labels from_logits : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %1 = graph.softmax %logits {axis = 0 : i64} : tensor<4x2xf32>
  %l1 = graph.categorical_crossentropy %1, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %2 = graph.softmax %logits : tensor<4x2xf32>
  %l2 = graph.categorical_crossentropy %2, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %3 = graph.dropout %2 {rate = 0.5 : f64, seed = 1 : i64} : tensor<4x2xf32>
  graph.output %l0, %l1, %l2, %3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x2xf32>
}

// -----

// An elementwise chain, attributes kept in the body.

// CHECK-LABEL: graph.model @elementwise_chain
// CHECK-NEXT:    %[[X:.+]] = graph.input "x"
// CHECK-NEXT:    %[[Y:.+]] = graph.input "y"
// CHECK-NEXT:    %[[E:.+]] = graph.elementwise %[[X]], %[[Y]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.+]]: tensor<f32>, %[[B:.+]]: tensor<f32>):
// CHECK-NEXT:      %[[S:.+]] = graph.add %[[A]], %[[B]] : tensor<f32>
// CHECK-NEXT:      %[[R:.+]] = graph.relu %[[S]] : tensor<f32>
// CHECK-NEXT:      %[[L:.+]] = graph.leaky_relu %[[R]] {alpha = 1.000000e-01 : f64} : tensor<f32>
// CHECK-NEXT:      %[[G:.+]] = graph.gelu %[[L]] {approximate} : tensor<f32>
// CHECK-NEXT:      graph.yield %[[G]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.output %[[E]] : tensor<4x8xf32>
graph.model @elementwise_chain {
  %x = graph.input "x" : tensor<4x8xf32>
  %y = graph.input "y" : tensor<4x8xf32>
  %0 = graph.add %x, %y : tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  %2 = graph.leaky_relu %1 {alpha = 1.000000e-01 : f64} : tensor<4x8xf32>
  %3 = graph.gelu %2 {approximate} : tensor<4x8xf32>
  graph.output %3 : tensor<4x8xf32>
}

// -----

// Two activation gradients summed, then another one, as in the backward of
// a residual block: ops that feed one elementwise op and nothing else fuse
// into it (one body argument per distinct outside value, so %s is passed
// once); a value with a second user (the sigmoid_grad) ends the group.

// CHECK-LABEL: graph.model @elementwise_groups
// CHECK-NEXT:    %[[DY:.+]] = graph.input "dy"
// CHECK-NEXT:    %[[S:.+]] = graph.input "s"
// CHECK-NEXT:    %[[X:.+]] = graph.input "x"
// CHECK-NEXT:    %[[E0:.+]] = graph.elementwise %[[DY]], %[[S]], %[[X]] : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.+]]: tensor<f32>, %[[B:.+]]: tensor<f32>, %[[C:.+]]: tensor<f32>):
// CHECK-NEXT:      %[[R:.+]] = graph.relu_grad %[[A]], %[[B]] : tensor<f32>
// CHECK-NEXT:      %[[T:.+]] = graph.tanh_grad %[[A]], %[[C]] : tensor<f32>
// CHECK-NEXT:      %[[SUM:.+]] = graph.add %[[R]], %[[T]] : tensor<f32>
// CHECK-NEXT:      %[[SG:.+]] = graph.sigmoid_grad %[[SUM]], %[[B]] : tensor<f32>
// CHECK-NEXT:      graph.yield %[[SG]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[E1:.+]] = graph.elementwise %[[E0]] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[D:.+]]: tensor<f32>):
// CHECK-NEXT:      %[[ELU:.+]] = graph.elu %[[D]] : tensor<f32>
// CHECK-NEXT:      %[[TWICE:.+]] = graph.add %[[ELU]], %[[ELU]] : tensor<f32>
// CHECK-NEXT:      %[[TANH:.+]] = graph.tanh %[[TWICE]] : tensor<f32>
// CHECK-NEXT:      graph.yield %[[TANH]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.output %[[E1]], %[[E0]]
graph.model @elementwise_groups {
  %dy = graph.input "dy" : tensor<4x8xf32>
  %s = graph.input "s" : tensor<4x8xf32>
  %x = graph.input "x" : tensor<4x8xf32>
  %0 = graph.relu_grad %dy, %s : tensor<4x8xf32>
  %1 = graph.tanh_grad %dy, %x : tensor<4x8xf32>
  %2 = graph.add %0, %1 : tensor<4x8xf32>
  %3 = graph.sigmoid_grad %2, %s : tensor<4x8xf32>
  %4 = graph.elu %3 : tensor<4x8xf32>
  %5 = graph.add %4, %4 : tensor<4x8xf32>
  %6 = graph.tanh %5 : tensor<4x8xf32>
  graph.output %6, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Nothing to fuse: the relu has a second user, softmax_grad and dropout are
// not elementwise, and an add of three tensors is left alone.

// CHECK-LABEL: graph.model @elementwise_not_fused
// CHECK-NOT:     graph.elementwise
// CHECK:         graph.relu %
// CHECK-NEXT:    graph.relu_grad
// CHECK-NEXT:    graph.softmax_grad
// CHECK-NEXT:    graph.sigmoid
// CHECK-NEXT:    graph.dropout
// CHECK-NEXT:    graph.tanh
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    graph.output
graph.model @elementwise_not_fused {
  %x = graph.input "x" : tensor<4x8xf32>
  %0 = graph.relu %x : tensor<4x8xf32>
  %1 = graph.relu_grad %x, %0 : tensor<4x8xf32>
  %2 = graph.softmax_grad %1, %x : tensor<4x8xf32>
  %3 = graph.sigmoid %2 : tensor<4x8xf32>
  %4 = graph.dropout %3 {rate = 5.000000e-01 : f64, seed = 1 : i64} : tensor<4x8xf32>
  %5 = graph.tanh %4 : tensor<4x8xf32>
  %6 = graph.add %5, %x, %x : tensor<4x8xf32>
  %7 = graph.relu %6 : tensor<4x8xf32>
  graph.output %7, %0 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Updates merge per optimizer attribute, at the last one's position; the
// other optimizer's update stays where it was.

// CHECK-LABEL: graph.model @updates_by_optimizer
// CHECK-NEXT:    %[[GA:.+]] = graph.input "ga"
// CHECK-NEXT:    %[[GB:.+]] = graph.input "gb"
// CHECK-NEXT:    %[[GC:.+]] = graph.input "gc"
// CHECK-NEXT:    %[[A:.+]] = graph.read_variable @a
// CHECK-NEXT:    %[[MA:.+]] = graph.read_variable @"a/momentum"
// CHECK-NEXT:    %[[B:.+]] = graph.read_variable @b
// CHECK-NEXT:    %[[PB:.+]] = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> params(%[[B]] : tensor<3xf32>) grads(%[[GB]] : tensor<3xf32>) slots()
// CHECK-NEXT:    graph.assign_variable @b, %[[PB]]
// CHECK-NEXT:    %[[C:.+]] = graph.read_variable @c
// CHECK-NEXT:    %[[MC:.+]] = graph.read_variable @"c/momentum"
// CHECK-NEXT:    %[[NP:.+]]:2, %[[NS:.+]]:2 = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = false> params(%[[A]], %[[C]] : tensor<2xf32>, tensor<4xf32>) grads(%[[GA]], %[[GC]] : tensor<2xf32>, tensor<4xf32>) slots(%[[MA]], %[[MC]] : tensor<2xf32>, tensor<4xf32>)
// CHECK-NEXT:    graph.assign_variable @a, %[[NP]]#0
// CHECK-NEXT:    graph.assign_variable @"a/momentum", %[[NS]]#0
// CHECK-NEXT:    graph.assign_variable @c, %[[NP]]#1
// CHECK-NEXT:    graph.assign_variable @"c/momentum", %[[NS]]#1
// CHECK-NEXT:    graph.output %[[NP]]#0, %[[PB]]
graph.variable @a : tensor<2xf32> = #graph.init<zeros>
graph.variable @b : tensor<3xf32> = #graph.init<zeros>
graph.variable @c : tensor<4xf32> = #graph.init<zeros>
graph.variable @"a/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"c/momentum" : tensor<4xf32> = #graph.init<zeros> {trainable = false}
graph.model @updates_by_optimizer {
  %ga = graph.input "ga" : tensor<2xf32>
  %gb = graph.input "gb" : tensor<3xf32>
  %gc = graph.input "gc" : tensor<4xf32>
  %a = graph.read_variable @a : tensor<2xf32>
  %ma = graph.read_variable @"a/momentum" : tensor<2xf32>
  %pa, %sa = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = false> params(%a : tensor<2xf32>) grads(%ga : tensor<2xf32>) slots(%ma : tensor<2xf32>) -> (tensor<2xf32>), (tensor<2xf32>)
  graph.assign_variable @a, %pa : tensor<2xf32>
  graph.assign_variable @"a/momentum", %sa : tensor<2xf32>
  %b = graph.read_variable @b : tensor<3xf32>
  %pb = "graph.optimizer_update"(%b, %gb) <{optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0>}> : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  graph.assign_variable @b, %pb : tensor<3xf32>
  %c = graph.read_variable @c : tensor<4xf32>
  %mc = graph.read_variable @"c/momentum" : tensor<4xf32>
  %pc, %sc = graph.optimizer_update #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = false> params(%c : tensor<4xf32>) grads(%gc : tensor<4xf32>) slots(%mc : tensor<4xf32>) -> (tensor<4xf32>), (tensor<4xf32>)
  graph.assign_variable @c, %pc : tensor<4xf32>
  graph.assign_variable @"c/momentum", %sc : tensor<4xf32>
  graph.output %pa, %pb : tensor<2xf32>, tensor<3xf32>
}

// -----

// An update's new value used before the last update by something other than
// an assign_variable: merging would have to move that user too, so the
// updates stay apart.

// CHECK-LABEL: graph.model @update_used_early
// CHECK:         %[[PA:.+]] = graph.optimizer_update {{.+}} params(%{{.+}} : tensor<2xf32>)
// CHECK-NEXT:    graph.assign_variable @a, %[[PA]]
// CHECK-NEXT:    %[[GC:.+]] = graph.relu %[[PA]]
// CHECK-NEXT:    %[[C:.+]] = graph.read_variable @c
// CHECK-NEXT:    %[[PC:.+]] = graph.optimizer_update {{.+}} params(%[[C]] : tensor<2xf32>) grads(%[[GC]] : tensor<2xf32>)
// CHECK-NEXT:    graph.assign_variable @c, %[[PC]]
graph.variable @a : tensor<2xf32> = #graph.init<zeros>
graph.variable @c : tensor<2xf32> = #graph.init<zeros>
graph.model @update_used_early {
  %ga = graph.input "ga" : tensor<2xf32>
  %a = graph.read_variable @a : tensor<2xf32>
  %pa = "graph.optimizer_update"(%a, %ga) <{optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0>}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  graph.assign_variable @a, %pa : tensor<2xf32>
  %gc = graph.relu %pa : tensor<2xf32>
  %c = graph.read_variable @c : tensor<2xf32>
  %pc = "graph.optimizer_update"(%c, %gc) <{optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0>}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  graph.assign_variable @c, %pc : tensor<2xf32>
  graph.output %pc : tensor<2xf32>
}

// -----

// max_pool2d_grad whose gradient feeds only the relu_grad of the pooled
// relu: one max_pool2d_grad {relu_grad}, the relu_grad gone.

// CHECK-LABEL: graph.model @pool_grad_relu_grad
// CHECK-NEXT:    %[[X:.+]] = graph.input "x"
// CHECK-NEXT:    %[[Y:.+]] = graph.input "y"
// CHECK-NEXT:    %[[DY:.+]] = graph.input "dy"
// CHECK-NEXT:    %[[DX:.+]] = graph.max_pool2d_grad %[[X]], %[[Y]], %[[DY]] pool_size = [2, 2] strides = [2, 2] padding = valid {relu_grad} : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
// CHECK-NEXT:    graph.output %[[DX]]
graph.model @pool_grad_relu_grad {
  %x = graph.input "x" : tensor<2x4x4x8xf32>
  %y = graph.input "y" : tensor<2x2x2x8xf32>
  %dy = graph.input "dy" : tensor<2x2x2x8xf32>
  %0 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
  %1 = graph.relu_grad %0, %x : tensor<2x4x4x8xf32>
  graph.output %1 : tensor<2x4x4x8xf32>
}

// -----

// Not fused: the relu_grad masks with another tensor than the pool's input,
// or the pool's gradient has a second user that wants it before the relu.

// CHECK-LABEL: graph.model @pool_grad_relu_grad_not_fused
// CHECK:         %[[DX:.+]] = graph.max_pool2d_grad {{.*}} padding = valid : (
// CHECK-NEXT:    %[[R:.+]] = graph.relu_grad %[[DX]], %{{.+}} : tensor<2x4x4x8xf32>
// CHECK-NEXT:    %[[DX2:.+]] = graph.max_pool2d_grad {{.*}} padding = valid : (
// CHECK-NEXT:    %[[R2:.+]] = graph.relu_grad %[[DX2]], %{{.+}} : tensor<2x4x4x8xf32>
// CHECK-NEXT:    graph.output %[[R]], %[[DX2]], %[[R2]]
graph.model @pool_grad_relu_grad_not_fused {
  %x = graph.input "x" : tensor<2x4x4x8xf32>
  %z = graph.input "z" : tensor<2x4x4x8xf32>
  %y = graph.input "y" : tensor<2x2x2x8xf32>
  %dy = graph.input "dy" : tensor<2x2x2x8xf32>
  %0 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
  %1 = graph.relu_grad %0, %z : tensor<2x4x4x8xf32>
  %2 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
  %3 = graph.relu_grad %2, %x : tensor<2x4x4x8xf32>
  graph.output %1, %2, %3 : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
}

// -----

// The bias gradient of the layer below the pool (conv2d + bias_add + relu
// -> max_pool2d) sums the pool's gradient after the relu's: it joins the
// max_pool2d_grad {relu_grad} as its input_grad_sum.

// CHECK-LABEL: graph.model @pool_grad_bias_grad
// CHECK-NEXT:    %[[X:.+]] = graph.input "x"
// CHECK-NEXT:    %[[Y:.+]] = graph.input "y"
// CHECK-NEXT:    %[[DY:.+]] = graph.input "dy"
// CHECK-NEXT:    %[[DX:.+]], %[[DB:.+]] = graph.max_pool2d_grad %[[X]], %[[Y]], %[[DY]] pool_size = [2, 2] strides = [2, 2] padding = valid {relu_grad} : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>)
// CHECK-NEXT:    graph.output %[[DX]], %[[DB]]
graph.model @pool_grad_bias_grad {
  %x = graph.input "x" : tensor<2x4x4x8xf32>
  %y = graph.input "y" : tensor<2x2x2x8xf32>
  %dy = graph.input "dy" : tensor<2x2x2x8xf32>
  %0 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
  %1 = graph.relu_grad %0, %x : tensor<2x4x4x8xf32>
  %2 = graph.bias_add_grad %1 : tensor<2x4x4x8xf32> -> tensor<8xf32>
  graph.output %1, %2 : tensor<2x4x4x8xf32>, tensor<8xf32>
}

// -----

// A bias gradient of the pool's gradient before a relu's gradient that
// cannot join the pool (the gradient has two users): the sum joins, and a
// second run must not then move the relu's gradient into the pool, which
// would make the sum one after the relu.

// CHECK-LABEL: graph.model @pool_grad_bias_grad_before_relu
// CHECK:         %[[DX:.+]], %[[DB:.+]] = graph.max_pool2d_grad {{.*}} padding = valid : ({{.*}}) -> (tensor<2x4x4x8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[R:.+]] = graph.relu_grad %[[DX]], %{{.+}} : tensor<2x4x4x8xf32>
// CHECK-NEXT:    graph.output %[[R]], %[[DB]]
graph.model @pool_grad_bias_grad_before_relu {
  %x = graph.input "x" : tensor<2x4x4x8xf32>
  %y = graph.input "y" : tensor<2x2x2x8xf32>
  %dy = graph.input "dy" : tensor<2x2x2x8xf32>
  %0 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xf32>, tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x4x4x8xf32>
  %1 = graph.bias_add_grad %0 : tensor<2x4x4x8xf32> -> tensor<8xf32>
  %2 = graph.relu_grad %0, %x : tensor<2x4x4x8xf32>
  graph.output %2, %1 : tensor<2x4x4x8xf32>, tensor<8xf32>
}

// -----

// A fused_conv2d read only by a max pool and that pool's gradient (the
// seed CNN's conv -> relu -> pool): fused_conv2d_pool records the argmax
// and max_pool2d_argmax_grad reads it, so the conv's output is gone.

// CHECK-LABEL: graph.model @conv_pool
// CHECK-NOT:     graph.fused_conv2d %
// CHECK:         %[[Y:.+]], %[[A:.+]] = graph.fused_conv2d_pool %[[X:.+]], %[[K:.+]] bias %[[B:.+]] strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x5x5x3xf32>, tensor<3x3x3x8xf32>, tensor<8xf32>) -> (tensor<2x1x1x8xf32>, tensor<2x1x1x8xi32>)
// CHECK-NEXT:    %[[DX:.+]], %[[DB:.+]] = graph.max_pool2d_argmax_grad %[[A]], %[[Y]], %{{.+}} pool_size = [2, 2] strides = [2, 2] padding = valid {relu_grad} : (tensor<2x1x1x8xi32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> (tensor<2x3x3x8xf32>, tensor<8xf32>)
// CHECK-NOT:     graph.max_pool2d
// CHECK-NOT:     graph.fused_conv2d %
// CHECK:         graph.output %[[Y]], %[[DX]], %[[DB]]
graph.model @conv_pool {
  %x = graph.input "x" : tensor<2x5x5x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  graph.output %3, %5, %6 : tensor<2x1x1x8xf32>, tensor<2x3x3x8xf32>, tensor<8xf32>
}

// -----

// Not fused: the conv's output has another reader (the model outputs it),
// or the pool is an average.

// CHECK-LABEL: graph.model @conv_pool_not_fused
// CHECK:         %[[C:.+]] = graph.fused_conv2d
// CHECK-NEXT:    graph.max_pool2d %[[C]]
// CHECK:         %[[C2:.+]] = graph.fused_conv2d
// CHECK-NEXT:    graph.avg_pool2d %[[C2]]
// CHECK-NOT:     fused_conv2d_pool
graph.model @conv_pool_not_fused {
  %x = graph.input "x" : tensor<2x5x5x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.max_pool2d %0 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %2 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x3x3x8xf32>
  %3 = graph.avg_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  graph.output %0, %1, %3 : tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>
}

// -----

// The first layer's backward pass: the dense gradient of the conv's output
// is read only by the kernel gradient (the model's input needs none), so
// fused_conv2d_pool_grad_kernel takes it from the pooled gradient and the
// argmax, with the bias gradient; the dense gradient is its workspace.

// CHECK-LABEL: graph.model @conv_pool_grad_kernel
// CHECK:         %[[Y:.+]], %[[A:.+]] = graph.fused_conv2d_pool %[[X:[^,]+]],
// CHECK-NOT:     graph.max_pool2d_argmax_grad
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         %[[DK:.+]], %{{.+}}, %[[DB:.+]] = graph.fused_conv2d_pool_grad_kernel %[[X]], %[[A]], %[[Y]], %[[DY:[^ ]+]] strides = [1, 1] padding = valid dilations = [1, 1] pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid {relu_grad} : (tensor<2x5x5x1xf32>, tensor<2x1x1x8xi32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> (tensor<3x3x1x8xf32>, tensor<2x3x3x8xf32>, tensor<8xf32>)
// CHECK-NOT:     graph.max_pool2d_argmax_grad
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         graph.output %[[Y]], %[[DK]], %[[DB]]
graph.model @conv_pool_grad_kernel {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %k = graph.input "k" : tensor<3x3x1x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  graph.output %3, %7, %6 : tensor<2x1x1x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>
}

// -----

// A layer below another: its input gradient reads the dense gradient too,
// so the fused kernel gradient writes it into its workspace (writes_workspace),
// where it stood, and conv2d_grad_input reads it from there.

// CHECK-LABEL: graph.model @conv_pool_grad_kernel_and_input
// CHECK:         %[[Y:.+]], %[[A:.+]] = graph.fused_conv2d_pool %[[X:[^,]+]],
// CHECK-NOT:     graph.max_pool2d_argmax_grad
// CHECK:         %[[DK:.+]], %[[DX:.+]], %[[DB:.+]] = graph.fused_conv2d_pool_grad_kernel %[[X]], %[[A]], %[[Y]], %{{[^ ]+}} {{.*}} {relu_grad, writes_workspace}
// CHECK-NOT:     graph.max_pool2d_argmax_grad
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         %[[DI:.+]] = graph.conv2d_grad_input %[[DX]]
// CHECK:         graph.output %[[Y]], %[[DK]], %[[DB]], %[[DI]]
graph.model @conv_pool_grad_kernel_and_input {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %k = graph.input "k" : tensor<3x3x1x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  %8 = graph.conv2d_grad_input %5, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x3x3x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x5x5x1xf32>
  graph.output %3, %7, %6, %8 : tensor<2x1x1x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>, tensor<2x5x5x1xf32>
}

// -----

// The input gradient before the kernel gradient: the fused op stands where
// the argmax gradient did, before both readers.

// CHECK-LABEL: graph.model @conv_pool_grad_input_first
// CHECK:         %[[DK:.+]], %[[DX:.+]], %[[DB:.+]] = graph.fused_conv2d_pool_grad_kernel {{.*}} {relu_grad, writes_workspace}
// CHECK-NEXT:    %[[DI:.+]] = graph.conv2d_grad_input %[[DX]]
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         graph.output %{{.+}}, %[[DK]], %[[DB]], %[[DI]]
graph.model @conv_pool_grad_input_first {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %k = graph.input "k" : tensor<3x3x1x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  %8 = graph.conv2d_grad_input %5, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x3x3x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x5x5x1xf32>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  graph.output %3, %7, %6, %8 : tensor<2x1x1x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>, tensor<2x5x5x1xf32>
}

// -----

// Two kernel gradients of one dense gradient: neither is fused (the second
// would read the first's workspace).

// CHECK-LABEL: graph.model @conv_pool_grad_two_kernel_grads
// CHECK:         %[[DX:.+]], %{{.+}} = graph.max_pool2d_argmax_grad
// CHECK-DAG:     graph.conv2d_grad_kernel %{{.+}}, %[[DX]]
// CHECK-DAG:     graph.conv2d_grad_input %[[DX]]
// CHECK-NOT:     fused_conv2d_pool_grad_kernel
graph.model @conv_pool_grad_two_kernel_grads {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %k = graph.input "k" : tensor<3x3x1x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  %9 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  %8 = graph.conv2d_grad_input %5, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x3x3x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x5x5x1xf32>
  graph.output %3, %7, %6, %8, %9 : tensor<2x1x1x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>, tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>
}

// -----

// A pool gradient's bias sum read before the kernel gradient (a shared
// conv's bias gradients added first, or a mixed-precision step's cast):
// fused_conv2d_pool_grad_kernel takes the argmax gradient's place, so the
// sum is defined before its reader.

// CHECK-LABEL: graph.model @conv_pool_grad_bias_read_early
// CHECK:         %[[DK:.+]], %{{.+}}, %[[DB:.+]] = graph.fused_conv2d_pool_grad_kernel
// CHECK-NEXT:    %[[SUM:.+]] = graph.add %[[DB]], %{{.+}}
// CHECK-NOT:     graph.max_pool2d_argmax_grad
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         graph.output %{{.+}}, %[[DK]], %[[SUM]]
graph.model @conv_pool_grad_bias_read_early {
  %x = graph.input "x" : tensor<2x5x5x1xf32>
  %k = graph.input "k" : tensor<3x3x1x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x1x1x8xf32>
  %other = graph.input "other" : tensor<8xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<3x3x1x8xf32>) -> tensor<2x3x3x8xf32>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf32>, tensor<8xf32>
  %2 = graph.relu %1 : tensor<2x3x3x8xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf32> -> tensor<2x1x1x8xf32>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xf32>, tensor<2x1x1x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x3x3x8xf32>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf32>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf32> -> tensor<8xf32>
  %db = graph.add %6, %other : tensor<8xf32>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf32>, tensor<2x3x3x8xf32>) -> tensor<3x3x1x8xf32>
  graph.output %3, %7, %db : tensor<2x1x1x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>
}

// -----

// The first layer in bfloat16 (a mixed_bfloat16 step): fused as in
// float32. fused_conv2d_pool rounds the convolution to bfloat16 before it
// pools it, and a 2x2 pool at stride 2 tiles its input, so the dense
// gradient the fused kernel gradient skips would hold each pooled gradient
// unchanged.

// CHECK-LABEL: graph.model @conv_pool_grad_kernel_bf16
// CHECK:         %[[Y:.+]], %[[A:.+]] = graph.fused_conv2d_pool %[[X:[^,]+]], {{.+}} : (tensor<2x5x5x1xbf16>, tensor<3x3x1x8xbf16>, tensor<8xbf16>) -> (tensor<2x1x1x8xbf16>, tensor<2x1x1x8xi32>)
// CHECK-NOT:     graph.max_pool2d
// CHECK-NOT:     graph.conv2d_grad_kernel
// CHECK:         %[[DK:.+]], %{{.+}}, %[[DB:.+]] = graph.fused_conv2d_pool_grad_kernel %[[X]], %[[A]], %[[Y]], %{{[^ ]+}} {{.+}} -> (tensor<3x3x1x8xbf16>, tensor<2x3x3x8xbf16>, tensor<8xbf16>)
// CHECK:         graph.output %[[Y]], %[[DK]], %[[DB]]
graph.model @conv_pool_grad_kernel_bf16 {
  %x = graph.input "x" : tensor<2x5x5x1xbf16>
  %k = graph.input "k" : tensor<3x3x1x8xbf16>
  %b = graph.input "b" : tensor<8xbf16>
  %dy = graph.input "dy" : tensor<2x1x1x8xbf16>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xbf16>, tensor<3x3x1x8xbf16>) -> tensor<2x3x3x8xbf16>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xbf16>, tensor<8xbf16>
  %2 = graph.relu %1 : tensor<2x3x3x8xbf16>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xbf16> -> tensor<2x1x1x8xbf16>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x3x3x8xbf16>, tensor<2x1x1x8xbf16>, tensor<2x1x1x8xbf16>) -> tensor<2x3x3x8xbf16>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xbf16>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xbf16> -> tensor<8xbf16>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xbf16>, tensor<2x3x3x8xbf16>) -> tensor<3x3x1x8xbf16>
  graph.output %3, %7, %6 : tensor<2x1x1x8xbf16>, tensor<3x3x1x8xbf16>, tensor<8xbf16>
}

// -----

// Overlapping windows (2x2 at stride 1) in float16: a position of the dense
// gradient sums several pooled gradients and is rounded to float16 there,
// which a fused kernel gradient would not do, so the kernel gradient stays
// conv2d_grad_kernel (and the bias gradient bias_add_grad: the next case); the
// forward pass still fuses.

// CHECK-LABEL: graph.model @conv_pool_grad_kernel_overlapping_f16
// CHECK:         graph.fused_conv2d_pool
// CHECK:         %[[DX:.+]] = graph.max_pool2d_argmax_grad
// CHECK-DAG:     graph.bias_add_grad %[[DX]]
// CHECK-DAG:     graph.conv2d_grad_kernel %{{.+}}, %[[DX]]
// CHECK-NOT:     fused_conv2d_pool_grad_kernel
graph.model @conv_pool_grad_kernel_overlapping_f16 {
  %x = graph.input "x" : tensor<2x5x5x1xf16>
  %k = graph.input "k" : tensor<3x3x1x8xf16>
  %b = graph.input "b" : tensor<8xf16>
  %dy = graph.input "dy" : tensor<2x2x2x8xf16>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf16>, tensor<3x3x1x8xf16>) -> tensor<2x3x3x8xf16>
  %1 = graph.bias_add %0, %b : tensor<2x3x3x8xf16>, tensor<8xf16>
  %2 = graph.relu %1 : tensor<2x3x3x8xf16>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [1, 1] padding = valid : tensor<2x3x3x8xf16> -> tensor<2x2x2x8xf16>
  %4 = graph.max_pool2d_grad %2, %3, %dy pool_size = [2, 2] strides = [1, 1] padding = valid : (tensor<2x3x3x8xf16>, tensor<2x2x2x8xf16>, tensor<2x2x2x8xf16>) -> tensor<2x3x3x8xf16>
  %5 = graph.relu_grad %4, %2 : tensor<2x3x3x8xf16>
  %6 = graph.bias_add_grad %5 : tensor<2x3x3x8xf16> -> tensor<8xf16>
  %7 = graph.conv2d_grad_kernel %x, %5 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x1xf16>, tensor<2x3x3x8xf16>) -> tensor<3x3x1x8xf16>
  graph.output %3, %7, %6 : tensor<2x2x2x8xf16>, tensor<3x3x1x8xf16>, tensor<8xf16>
}

// -----

// A pool's bias gradient in bfloat16 over overlapping windows (2x2 at
// stride 1): the pool's kernel would sum dx as it computes it, where
// bias_add_grad sums it as stored, each position rounded after adding
// several windows' gradients; the two stay apart. In float64 the conv and
// its pool stay apart too: the fused kernels pool a float32 convolution.

// CHECK-LABEL: graph.model @pool_grad_bias_grad_overlapping_bf16
// CHECK:         %[[DX:.+]] = graph.max_pool2d_grad {{.+}} -> tensor<2x4x4x8xbf16>
// CHECK:         graph.bias_add_grad %[[DX]]
graph.model @pool_grad_bias_grad_overlapping_bf16 {
  %x = graph.input "x" : tensor<2x4x4x8xbf16>
  %y = graph.input "y" : tensor<2x3x3x8xbf16>
  %dy = graph.input "dy" : tensor<2x3x3x8xbf16>
  %0 = graph.max_pool2d_grad %x, %y, %dy pool_size = [2, 2] strides = [1, 1] padding = valid : (tensor<2x4x4x8xbf16>, tensor<2x3x3x8xbf16>, tensor<2x3x3x8xbf16>) -> tensor<2x4x4x8xbf16>
  %1 = graph.bias_add_grad %0 : tensor<2x4x4x8xbf16> -> tensor<8xbf16>
  graph.output %0, %1 : tensor<2x4x4x8xbf16>, tensor<8xbf16>
}

// CHECK-LABEL: graph.model @conv_pool_f64
// CHECK:         graph.fused_conv2d
// CHECK-NEXT:    graph.max_pool2d
// CHECK-NOT:     fused_conv2d_pool
graph.model @conv_pool_f64 {
  %x = graph.input "x" : tensor<2x5x5x3xf64>
  %k = graph.input "k" : tensor<3x3x3x8xf64>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x5x5x3xf64>, tensor<3x3x3x8xf64>) -> tensor<2x3x3x8xf64>
  %1 = graph.max_pool2d %0 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x3x3x8xf64> -> tensor<2x1x1x8xf64>
  graph.output %1 : tensor<2x1x1x8xf64>
}

// -----

// A sigmoid's binary cross-entropy reads the logits (from_logits), as
// Keras' TensorFlow backend computes it; its gradient then starts at the
// logits and the sigmoid_grad goes. The sigmoid stays for binary accuracy.
// A bias_add read by the loss as well as the sigmoid is not fused into the
// dense.

// CHECK-LABEL: graph.model @sigmoid_bce
// CHECK:         %[[Z:.+]] = graph.fused_dense %{{.+}}, %{{.+}} bias %{{.+}} activation = none
// CHECK-NEXT:    %[[P:.+]] = graph.sigmoid %[[Z]]
// CHECK-NEXT:    %[[LOSS:.+]] = graph.pointwise_loss binary_crossentropy %[[Z]], %[[T:.+]] from_logits label_smoothing = 1.000000e-01
// CHECK-NEXT:    %[[ACC:.+]] = graph.pointwise_loss binary_accuracy %[[P]], %[[T]] :
// CHECK-NEXT:    %[[DZ:.+]] = graph.pointwise_loss_grad binary_crossentropy %[[Z]], %[[T]] from_logits label_smoothing = 1.000000e-01
// CHECK-NEXT:    %[[DS:.+]] = graph.scale_by %[[DZ]]
// CHECK-NEXT:    graph.bias_add_grad %[[DS]]
// CHECK-NOT:     graph.sigmoid_grad
// CHECK:         graph.output %[[LOSS]], %[[ACC]]
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"optimizer/dynamic_scale" : tensor<f32> = #graph.init<zeros>
graph.model @sigmoid_bce {
  %x = graph.input "x" : tensor<4x3xf32>
  %t = graph.input "labels" : tensor<4x2xf32>
  %s = graph.read_variable @"optimizer/dynamic_scale" : tensor<f32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %b = graph.read_variable @"dense/bias" : tensor<2xf32>
  %0 = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = graph.bias_add %0, %b : tensor<4x2xf32>, tensor<2xf32>
  %2 = graph.sigmoid %1 : tensor<4x2xf32>
  %loss = graph.pointwise_loss binary_crossentropy %2, %t label_smoothing = 0.1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %acc = graph.pointwise_loss binary_accuracy %2, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %d2 = graph.pointwise_loss_grad binary_crossentropy %2, %t label_smoothing = 0.1 : tensor<4x2xf32>
  %d2s = graph.scale_by %d2, %s : tensor<4x2xf32>, tensor<f32>
  %d1 = graph.sigmoid_grad %d2s, %2 : tensor<4x2xf32>
  %db = graph.bias_add_grad %d1 : tensor<4x2xf32> -> tensor<2xf32>
  %dk = graph.dense_grad_kernel %x, %d1 : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  graph.output %loss, %acc, %db, %dk : tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<3x2xf32>
}

// -----

// A sigmoid read by another layer too sums two gradients before its
// sigmoid_grad: the loss keeps the probabilities (the gradient pair goes
// together or not at all).

// CHECK-LABEL: graph.model @sigmoid_shared
// CHECK:         %[[P:.+]] = graph.sigmoid
// CHECK-NEXT:    graph.pointwise_loss binary_crossentropy %[[P]], %{{[0-9]+}} :
// CHECK-NEXT:    graph.pointwise_loss_grad binary_crossentropy %[[P]], %{{[0-9]+}} :
// CHECK:         graph.sigmoid_grad
graph.model @sigmoid_shared {
  %z = graph.input "z" : tensor<4x2xf32>
  %t = graph.input "labels" : tensor<4x2xf32>
  %p = graph.sigmoid %z : tensor<4x2xf32>
  %loss = graph.pointwise_loss binary_crossentropy %p, %t : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %dp = graph.pointwise_loss_grad binary_crossentropy %p, %t : tensor<4x2xf32>
  %other = graph.tanh %p : tensor<4x2xf32>
  %sum = graph.add %dp, %other : tensor<4x2xf32>
  %dz = graph.sigmoid_grad %sum, %p : tensor<4x2xf32>
  graph.output %loss, %dz : tensor<f32>, tensor<4x2xf32>
}
