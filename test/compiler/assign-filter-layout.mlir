// RUN: graph-opt %s --split-input-file --graph-build-training-step --graph-fuse --graph-assign-filter-layout | FileCheck %s
// RUN: graph-opt %s --split-input-file --graph-build-training-step --graph-fuse --graph-assign-filter-layout --graph-assign-filter-layout | FileCheck %s
// The plan's programs, replicated, keep the layout (the gradients' buckets
// and the convolutions' launch configs included).
// RUN: graph-opt %s --split-input-file --graph-build-training-step --graph-fuse --graph-assign-filter-layout --dist-replicate=num-replicas=2 --dist-insert-all-reduce --graph-lower-to-exec | FileCheck %s --check-prefix=EXEC

// graph-assign-filter-layout stores kernels that only convolutions read OHWI,
// with their optimizer slots, and names their Keras form; the second RUN
// line checks that a second run changes nothing.

// Two trained convolutions (Adam: slots m and v). The first has no input
// gradient (it reads the model's input); the second's input gradient reads
// the kernel OHWI too. The dense kernel is untouched.

// CHECK-LABEL: graph.variable @"conv2d/kernel" : tensor<4x3x3x2xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 4>}
// CHECK-NEXT:  graph.variable @"conv2d/kernel/m" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 4>, trainable = false}
// CHECK-NEXT:  graph.variable @"conv2d/kernel/v" : tensor<4x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 4>, trainable = false}
// CHECK-NEXT:  graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>{{$}}
// CHECK:       graph.variable @"conv2d_1/kernel" : tensor<4x3x3x4xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 4, 4>}
// CHECK:       graph.variable @"dense/kernel" : tensor<64x3xf32> = #graph.init<glorot_uniform>{{$}}
// CHECK-NEXT:  graph.variable @"dense/kernel/m" : tensor<64x3xf32> = #graph.init<zeros> {trainable = false}

// CHECK-LABEL: graph.model @train_step
// CHECK:       %[[K:.+]] = graph.read_variable @"conv2d/kernel" : tensor<4x3x3x2xf32>
// CHECK:       %[[Y:.+]] = graph.fused_conv2d %[[X:.+]], %[[K]] bias %{{.+}} strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi activation = relu : (tensor<2x8x8x2xf32>, tensor<4x3x3x2xf32>, tensor<4xf32>) -> tensor<2x6x6x4xf32>
// CHECK:       %[[K1:.+]] = graph.read_variable @"conv2d_1/kernel" : tensor<4x3x3x4xf32>
// CHECK:       graph.fused_conv2d %[[Y]], %[[K1]] strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi activation = none
// CHECK:       %[[G1:.+]] = graph.conv2d_grad_kernel %[[Y]], %[[DY:.+]] strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x6x6x4xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x4xf32>
// CHECK-NEXT:  graph.conv2d_grad_input %[[DY]], %[[K1]] strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x6x6x4xf32>
// CHECK:       %[[G0:.+]] = graph.conv2d_grad_kernel %[[X]], %{{.+}} strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x8x8x2xf32>, tensor<2x6x6x4xf32>) -> tensor<4x3x3x2xf32>
// CHECK:       graph.optimizer_update #graph.adam<{{.+}}> params({{.+}} : tensor<64x3xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4x3x3x2xf32>) grads(%{{.+}}, %[[G1]], %{{.+}}, %[[G0]] : {{.+}}) slots({{.+}} : tensor<64x3xf32>, tensor<64x3xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x2xf32>, tensor<4x3x3x2xf32>) -> (tensor<64x3xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4x3x3x2xf32>), (tensor<64x3xf32>, tensor<64x3xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x2xf32>, tensor<4x3x3x2xf32>)
// CHECK:       graph.assign_variable @"conv2d/kernel", %{{.+}} : tensor<4x3x3x2xf32>
// CHECK-NEXT:  graph.assign_variable @"conv2d/kernel/m", %{{.+}} : tensor<4x3x3x2xf32>
// CHECK-LABEL: graph.model @eval_step
// CHECK:       graph.fused_conv2d {{.+}} filter_layout = ohwi activation = relu
// CHECK-LABEL: graph.model @predict_step
// CHECK:       graph.fused_conv2d {{.+}} filter_layout = ohwi activation = relu

// EXEC-LABEL: exec.program @train
// EXEC:       exec.launch "fused_conv2d" {{.*}}filter_layout = "ohwi"
// EXEC:       exec.launch "conv2d_grad_kernel" {{.*}}filter_layout = "ohwi"
// EXEC:       exec.all_reduce

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

// A depthwise kernel (Keras' [kh, kw, C, m], groups = C) is stored
// [C * m, kh, kw, 1]: its axes C, m, kh, kw. A frozen kernel has no
// gradient and no slots and is stored OHWI all the same. A kernel two
// convolutions share gets the sum of two gradients: it keeps Keras' layout,
// with its slot.

// CHECK-LABEL: graph.variable @"dw/depthwise_kernel" : tensor<6x3x3x1xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 2, 3, 0, 1>, logical_shape = array<i64: 3, 3, 3, 2>}
// CHECK-NEXT:  graph.variable @"dw/depthwise_kernel/momentum" : tensor<6x3x3x1xf32> = #graph.init<zeros> {logical_permutation = array<i64: 2, 3, 0, 1>, logical_shape = array<i64: 3, 3, 3, 2>, trainable = false}
// CHECK-NEXT:  graph.variable @"shared/kernel" : tensor<1x1x6x6xf32> = #graph.init<glorot_uniform>{{$}}
// CHECK-NEXT:  graph.variable @"shared/kernel/momentum" : tensor<1x1x6x6xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT:  graph.variable @"frozen/kernel" : tensor<6x1x1x6xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 1, 1, 6, 6>, trainable = false}
// CHECK-LABEL: graph.model @train_step
// CHECK:       graph.fused_conv2d {{.+}} groups = 3 filter_layout = ohwi activation = none : (tensor<2x6x6x3xf32>, tensor<6x3x3x1xf32>) -> tensor<2x4x4x6xf32>
// CHECK:       graph.fused_conv2d {{.+}} filter_layout = ohwi activation = none : (tensor<2x4x4x6xf32>, tensor<6x1x1x6xf32>) -> tensor<2x4x4x6xf32>
// CHECK:       graph.conv2d_grad_input {{.+}} : (tensor<2x4x4x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x4x4x6xf32>
// CHECK:       graph.add {{.+}} : tensor<1x1x6x6xf32>
// CHECK:       graph.conv2d_grad_input {{.+}} filter_layout = ohwi : (tensor<2x4x4x6xf32>, tensor<6x1x1x6xf32>) -> tensor<2x4x4x6xf32>
// CHECK-NEXT:  graph.conv2d_grad_kernel {{.+}} groups = 3 filter_layout = ohwi : (tensor<2x6x6x3xf32>, tensor<2x4x4x6xf32>) -> tensor<6x3x3x1xf32>

graph.variable @"dw/depthwise_kernel" : tensor<3x3x3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"shared/kernel" : tensor<1x1x6x6xf32> = #graph.init<glorot_uniform>
graph.variable @"frozen/kernel" : tensor<1x1x6x6xf32> = #graph.init<glorot_uniform> {trainable = false}
graph.variable @"dense/kernel" : tensor<96x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x6x6x3xf32>
  %k = graph.read_variable @"dw/depthwise_kernel" : tensor<3x3x3x2xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 3 : (tensor<2x6x6x3xf32>, tensor<3x3x3x2xf32>) -> tensor<2x4x4x6xf32>
  %f = graph.read_variable @"frozen/kernel" : tensor<1x1x6x6xf32>
  %1 = graph.conv2d %0, %f strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x4x4x6xf32>
  %s = graph.read_variable @"shared/kernel" : tensor<1x1x6x6xf32>
  %2 = graph.conv2d %1, %s strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x4x4x6xf32>
  %3 = graph.conv2d %2, %s strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x4x4x6xf32>
  %4 = graph.reshape %3 : tensor<2x4x4x6xf32> -> tensor<2x96xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<96x3xf32>
  %5 = graph.dense %4, %kd : (tensor<2x96xf32>, tensor<96x3xf32>) -> tensor<2x3xf32>
  %6 = graph.softmax %5 : tensor<2x3xf32>
  graph.output %6 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = false> global_batch_size = 2

// -----

// A Conv2DTranspose (conv2d_grad_input in the forward model) reads its
// kernel as the convolution it transposes does: stored OHWI, its kernel
// gradient too, with clipnorm's graph.global_norm of that gradient. A
// kernel something else reads (here a graph.add) keeps Keras' layout.

// CHECK-LABEL: graph.variable @"up/kernel" : tensor<3x3x3x2xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 3>}
// CHECK-NEXT:  graph.variable @"up/kernel/momentum" : tensor<3x3x3x2xf32> = #graph.init<zeros> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 2, 3>, trainable = false}
// CHECK-NEXT:  graph.variable @"sum/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>{{$}}
// CHECK-LABEL: graph.model @train_step
// CHECK:       graph.conv2d_grad_input {{.+}} filter_layout = ohwi : (tensor<2x4x4x3xf32>, tensor<3x3x3x2xf32>) -> tensor<2x6x6x2xf32>
// CHECK:       graph.fused_conv2d {{.+}} dilations = [1, 1] activation = none : (tensor<2x6x6x2xf32>, tensor<1x1x2x2xf32>)
// CHECK:       %[[G:.+]] = graph.conv2d_grad_kernel {{.+}} filter_layout = ohwi : (tensor<2x6x6x2xf32>, tensor<2x4x4x3xf32>) -> tensor<3x3x3x2xf32>
// CHECK:       graph.global_norm %[[G]] : tensor<3x3x3x2xf32> -> tensor<f32>

graph.variable @"up/kernel" : tensor<3x3x2x3xf32> = #graph.init<glorot_uniform>
graph.variable @"sum/kernel" : tensor<1x1x2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<72x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x4x4x3xf32>
  %k = graph.read_variable @"up/kernel" : tensor<3x3x2x3xf32>
  %0 = graph.conv2d_grad_input %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x4x4x3xf32>, tensor<3x3x2x3xf32>) -> tensor<2x6x6x2xf32>
  %s = graph.read_variable @"sum/kernel" : tensor<1x1x2x2xf32>
  %s2 = graph.add %s, %s : tensor<1x1x2x2xf32>
  %1 = graph.conv2d %0, %s2 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x6x6x2xf32>, tensor<1x1x2x2xf32>) -> tensor<2x6x6x2xf32>
  %2 = graph.reshape %1 : tensor<2x6x6x2xf32> -> tensor<2x72xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<72x3xf32>
  %3 = graph.dense %2, %kd : (tensor<2x72xf32>, tensor<72x3xf32>) -> tensor<2x3xf32>
  %4 = graph.softmax %3 : tensor<2x3xf32>
  graph.output %4 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = false, clipnorm = 0.5> global_batch_size = 2

// -----

// The seed CNN's first layer (conv -> relu -> max pool on the model's
// input): graph-fuse gives its kernel gradient as a
// fused_conv2d_pool_grad_kernel, which gets the OHWI layout as a
// conv2d_grad_kernel would, and keeps it in the replicated plan.

// CHECK-LABEL: graph.variable @"conv2d/kernel" : tensor<4x3x3x1xf32> = #graph.init<glorot_uniform> {logical_permutation = array<i64: 3, 0, 1, 2>, logical_shape = array<i64: 3, 3, 1, 4>}
// CHECK-LABEL: graph.model @train_step
// CHECK:       graph.fused_conv2d_pool {{.+}} filter_layout = ohwi activation = relu
// CHECK:       %[[G:.+]], %{{.+}}, %{{.+}} = graph.fused_conv2d_pool_grad_kernel {{.+}} filter_layout = ohwi pool_size = [2, 2] {{.+}} -> (tensor<4x3x3x1xf32>, tensor<2x6x6x4xf32>, tensor<4xf32>)
// CHECK:       graph.optimizer_update {{.+}} grads({{.*}}%[[G]]

// EXEC-LABEL: exec.program @train
// EXEC:       exec.launch "fused_conv2d_pool_grad_kernel" {{.*}}filter_layout = "ohwi"

graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.variable @"dense/kernel" : tensor<36x3xf32> = #graph.init<glorot_uniform>
graph.model @m {
  %x = graph.input "input_layer" : tensor<2x8x8x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x4xf32>
  %0 = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<2x8x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x6x6x4xf32>
  %b = graph.read_variable @"conv2d/bias" : tensor<4xf32>
  %1 = graph.bias_add %0, %b : tensor<2x6x6x4xf32>, tensor<4xf32>
  %2 = graph.relu %1 : tensor<2x6x6x4xf32>
  %3 = graph.max_pool2d %2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x6x6x4xf32> -> tensor<2x3x3x4xf32>
  %4 = graph.reshape %3 : tensor<2x3x3x4xf32> -> tensor<2x36xf32>
  %kd = graph.read_variable @"dense/kernel" : tensor<36x3xf32>
  %5 = graph.dense %4, %kd : (tensor<2x36xf32>, tensor<36x3xf32>) -> tensor<2x3xf32>
  %6 = graph.softmax %5 : tensor<2x3xf32>
  graph.output %6 : tensor<2x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2
