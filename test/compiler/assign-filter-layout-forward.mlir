// RUN: graph-opt %s --split-input-file --graph-assign-filter-layout | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-assign-filter-layout --graph-build-training-step | FileCheck %s --check-prefix=STEP

// graph-assign-filter-layout on a forward model, before the training step
// exists (graphc runs it after; graph-opt lets a user run it first). The
// training step then builds its kernel gradients in the kernel's layout and
// stores the slots as the kernel is stored.

// CHECK-LABEL: graph.variable @"conv2d/kernel" : tensor<4x3x3x2xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 4>}
// CHECK:       graph.conv2d %{{.+}}, %{{.+}} strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x8x8x2xf32>, tensor<4x3x3x2xf32>) -> tensor<2x6x6x4xf32>

// STEP:       graph.variable @"conv2d/kernel/m" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 4>, trainable = false}
// STEP-LABEL: graph.model @train_step
// STEP:       graph.conv2d_grad_kernel {{.+}} filter_layout = ohwi : (tensor<2x6x6x4xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x4xf32>
// STEP-NEXT:  graph.conv2d_grad_input {{.+}} filter_layout = ohwi : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x6x6x4xf32>
// STEP:       graph.conv2d_grad_kernel {{.+}} filter_layout = ohwi : (tensor<2x8x8x2xf32>, tensor<2x6x6x4xf32>) -> tensor<4x3x3x2xf32>

graph.variable @"conv2d/kernel" : tensor<3x3x2x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.variable @"conv2d_1/kernel" : tensor<3x3x4x4xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<64x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x8x8x2xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x2x4xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<2x6x6x4xf32>
  %b = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  %k1 = graph.read_variable @"conv2d_1/kernel" : tensor<3x3x4x4xf32>
  %3 = graph.conv2d %2, %k1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x4x4x4xf32>
  %4 = graph.reshape %3 : tensor<2x4x4x4xf32> -> tensor<2x64xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<64x3xf32>
  %5 = graph.dense %4, %kd : (tensor<2x64xf32>, tensor<64x3xf32>) -> tensor<2x3xf32>
  %6 = graph.softmax %5 : tensor<2x3xf32>
  graph.output %6 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 2

// -----

// A variable a convolution reads as its input as well as its kernel stays
// as it is.

// CHECK-LABEL: graph.variable @k : tensor<3x3x3x3xf32> = #graph.init<glorot_uniform>{{$}}
// CHECK:       graph.conv2d %[[K:.+]], %[[K]] strides = [1, 1] padding = same dilations = [1, 1] : (tensor<3x3x3x3xf32>, tensor<3x3x3x3xf32>) -> tensor<3x3x3x3xf32>
graph.variable @"k" : tensor<3x3x3x3xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<27x2xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<3x3x3x3xf32>
  %k = graph.read_variable @"k" : tensor<3x3x3x3xf32>
  %0 = graph.conv2d %k, %k strides = [1, 1] padding = same dilations = [1, 1] : (tensor<3x3x3x3xf32>, tensor<3x3x3x3xf32>) -> tensor<3x3x3x3xf32>
  %1 = graph.add %0, %x : tensor<3x3x3x3xf32>
  %2 = graph.reshape %1 : tensor<3x3x3x3xf32> -> tensor<3x27xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<27x2xf32>
  %3 = graph.dense %2, %kd : (tensor<3x27xf32>, tensor<27x2xf32>) -> tensor<3x2xf32>
  %4 = graph.softmax %3 : tensor<3x2xf32>
  graph.output %4 : tensor<3x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.0, nesterov = false> global_batch_size = 3
