// RUN: graph-opt %s --split-input-file | FileCheck %s

// Window arithmetic against Keras' conv_output_length. Every declared result
// type below is checked against the inferred one by the verifier, so each
// case parses only if the formula agrees with Keras:
//   same:  out = ceil(in / stride)                         (any kernel, any dilation)
//   valid: out = floor((in - (k - 1) * d - 1) / stride) + 1

// Same padding, stride 2 on odd sizes rounds up: ceil(7 / 2) = 4,
// ceil(9 / 2) = 5.
// CHECK-LABEL: graph.model @conv_same_stride2_odd
// CHECK: graph.conv2d {{.*}} strides = [2, 2] padding = same {{.*}} -> tensor<2x4x5x8xf32>
graph.model @conv_same_stride2_odd {
  %x = graph.input "x" : tensor<2x7x9x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  %y = graph.conv2d %x, %k strides = [2, 2] padding = same dilations = [1, 1] : (tensor<2x7x9x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x4x5x8xf32>
  graph.output %y : tensor<2x4x5x8xf32>
}

// -----

// Same padding, stride 3: ceil(10 / 3) = 4, ceil(3 / 3) = 1.
// CHECK-LABEL: graph.model @conv_same_stride3
// CHECK: graph.conv2d {{.*}} -> tensor<1x4x1x2xf32>
graph.model @conv_same_stride3 {
  %x = graph.input "x" : tensor<1x10x3x1xf32>
  %k = graph.input "k" : tensor<2x2x1x2xf32>
  %y = graph.conv2d %x, %k strides = [3, 3] padding = same dilations = [1, 1] : (tensor<1x10x3x1xf32>, tensor<2x2x1x2xf32>) -> tensor<1x4x1x2xf32>
  graph.output %y : tensor<1x4x1x2xf32>
}

// -----

// Same padding keeps the size even when the kernel is larger than the input.
// CHECK-LABEL: graph.model @conv_same_kernel_larger_than_input
// CHECK: graph.conv2d {{.*}} -> tensor<1x3x2x4xf32>
graph.model @conv_same_kernel_larger_than_input {
  %x = graph.input "x" : tensor<1x3x2x1xf32>
  %k = graph.input "k" : tensor<5x5x1x4xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = same dilations = [1, 1] : (tensor<1x3x2x1xf32>, tensor<5x5x1x4xf32>) -> tensor<1x3x2x4xf32>
  graph.output %y : tensor<1x3x2x4xf32>
}

// -----

// Same padding ignores the dilation: 10 stays 10 with a 3x3 kernel at
// dilation 2 (effective 5x5).
// CHECK-LABEL: graph.model @conv_same_dilation2
// CHECK: graph.conv2d {{.*}} dilations = [2, 2] {{.*}} -> tensor<1x10x11x1xf32>
graph.model @conv_same_dilation2 {
  %x = graph.input "x" : tensor<1x10x11x1xf32>
  %k = graph.input "k" : tensor<3x3x1x1xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = same dilations = [2, 2] : (tensor<1x10x11x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x10x11x1xf32>
  graph.output %y : tensor<1x10x11x1xf32>
}

// -----

// Valid padding, dilation 2: a 3x3 kernel spans 5, so 10 - 5 + 1 = 6 and
// 11 - 5 + 1 = 7.
// CHECK-LABEL: graph.model @conv_valid_dilation2
// CHECK: graph.conv2d {{.*}} dilations = [2, 2] {{.*}} -> tensor<1x6x7x1xf32>
graph.model @conv_valid_dilation2 {
  %x = graph.input "x" : tensor<1x10x11x1xf32>
  %k = graph.input "k" : tensor<3x3x1x1xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [2, 2] : (tensor<1x10x11x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x6x7x1xf32>
  graph.output %y : tensor<1x6x7x1xf32>
}

// -----

// Valid padding, dilation 3 exactly fits: (3 - 1) * 3 + 1 = 7 = input.
// CHECK-LABEL: graph.model @conv_valid_dilation_exact_fit
// CHECK: graph.conv2d {{.*}} -> tensor<1x1x1x1xf32>
graph.model @conv_valid_dilation_exact_fit {
  %x = graph.input "x" : tensor<1x7x7x1xf32>
  %k = graph.input "k" : tensor<3x3x1x1xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [3, 3] : (tensor<1x7x7x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x1x1x1xf32>
  graph.output %y : tensor<1x1x1x1xf32>
}

// -----

// Valid padding, stride 2 rounds down: floor((7 - 3) / 2) + 1 = 3,
// floor((8 - 3) / 2) + 1 = 3.
// CHECK-LABEL: graph.model @conv_valid_stride2
// CHECK: graph.conv2d {{.*}} -> tensor<2x3x3x4xf32>
graph.model @conv_valid_stride2 {
  %x = graph.input "x" : tensor<2x7x8x1xf32>
  %k = graph.input "k" : tensor<3x3x1x4xf32>
  %y = graph.conv2d %x, %k strides = [2, 2] padding = valid dilations = [1, 1] : (tensor<2x7x8x1xf32>, tensor<3x3x1x4xf32>) -> tensor<2x3x3x4xf32>
  graph.output %y : tensor<2x3x3x4xf32>
}

// -----

// Valid padding, non-square kernel and strides: floor((28 - 5) / 2) + 1 = 12,
// floor((28 - 1) / 3) + 1 = 10.
// CHECK-LABEL: graph.model @conv_valid_rectangular
// CHECK: graph.conv2d {{.*}} -> tensor<2x12x10x4xf32>
graph.model @conv_valid_rectangular {
  %x = graph.input "x" : tensor<2x28x28x1xf32>
  %k = graph.input "k" : tensor<5x1x1x4xf32>
  %y = graph.conv2d %x, %k strides = [2, 3] padding = valid dilations = [1, 1] : (tensor<2x28x28x1xf32>, tensor<5x1x1x4xf32>) -> tensor<2x12x10x4xf32>
  graph.output %y : tensor<2x12x10x4xf32>
}

// -----

// Pooling, valid, stride 1: 5 - 2 + 1 = 4 and 5 - 3 + 1 = 3.
// CHECK-LABEL: graph.model @pool_valid_stride1
// CHECK: graph.max_pool2d {{.*}} -> tensor<2x4x3x8xf32>
graph.model @pool_valid_stride1 {
  %x = graph.input "x" : tensor<2x5x5x8xf32>
  %y = graph.max_pool2d %x pool_size = [2, 3] strides = [1, 1] padding = valid : tensor<2x5x5x8xf32> -> tensor<2x4x3x8xf32>
  graph.output %y : tensor<2x4x3x8xf32>
}

// -----

// Pooling, same, stride 1 keeps the size.
// CHECK-LABEL: graph.model @pool_same_stride1
// CHECK: graph.avg_pool2d {{.*}} -> tensor<2x5x6x8xf32>
graph.model @pool_same_stride1 {
  %x = graph.input "x" : tensor<2x5x6x8xf32>
  %y = graph.avg_pool2d %x pool_size = [3, 3] strides = [1, 1] padding = same : tensor<2x5x6x8xf32> -> tensor<2x5x6x8xf32>
  graph.output %y : tensor<2x5x6x8xf32>
}

// -----

// Keras' default pooling (pool 2, stride 2) on an odd size drops the last
// row with valid padding and keeps it with same: 7 -> 3 and 7 -> 4.
// CHECK-LABEL: graph.model @pool_odd
// CHECK: graph.max_pool2d {{.*}} padding = valid {{.*}} -> tensor<2x3x3x8xf32>
// CHECK: graph.max_pool2d {{.*}} padding = same {{.*}} -> tensor<2x4x4x8xf32>
graph.model @pool_odd {
  %x = graph.input "x" : tensor<2x7x7x8xf32>
  %v = graph.max_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<2x7x7x8xf32> -> tensor<2x3x3x8xf32>
  %s = graph.max_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = same : tensor<2x7x7x8xf32> -> tensor<2x4x4x8xf32>
  graph.output %v, %s : tensor<2x3x3x8xf32>, tensor<2x4x4x8xf32>
}

// -----

// Pooling with overlapping windows: pool 3, stride 2 on 7 gives
// floor((7 - 3) / 2) + 1 = 3 (valid) and ceil(7 / 2) = 4 (same).
// CHECK-LABEL: graph.model @pool_overlapping
// CHECK: graph.avg_pool2d {{.*}} padding = valid {{.*}} -> tensor<1x3x3x1xf32>
// CHECK: graph.avg_pool2d {{.*}} padding = same {{.*}} -> tensor<1x4x4x1xf32>
graph.model @pool_overlapping {
  %x = graph.input "x" : tensor<1x7x7x1xf32>
  %v = graph.avg_pool2d %x pool_size = [3, 3] strides = [2, 2] padding = valid : tensor<1x7x7x1xf32> -> tensor<1x3x3x1xf32>
  %s = graph.avg_pool2d %x pool_size = [3, 3] strides = [2, 2] padding = same : tensor<1x7x7x1xf32> -> tensor<1x4x4x1xf32>
  graph.output %v, %s : tensor<1x3x3x1xf32>, tensor<1x4x4x1xf32>
}

// -----

// Pooling with a stride larger than the window: floor((10 - 2) / 3) + 1 = 3.
// CHECK-LABEL: graph.model @pool_stride_larger_than_window
// CHECK: graph.max_pool2d {{.*}} -> tensor<1x3x3x1xf32>
graph.model @pool_stride_larger_than_window {
  %x = graph.input "x" : tensor<1x10x10x1xf32>
  %y = graph.max_pool2d %x pool_size = [2, 2] strides = [3, 3] padding = valid : tensor<1x10x10x1xf32> -> tensor<1x3x3x1xf32>
  graph.output %y : tensor<1x3x3x1xf32>
}

// -----

// The Fashion-MNIST CNN, end to end: 28 -conv3 valid-> 26 -pool2-> 13
// -conv3 valid-> 11 -pool2-> 5 -flatten-> 5 * 5 * 64 = 1600 -dense-> 10.
// CHECK-LABEL: graph.model @fashion_mnist_cnn
// CHECK: graph.conv2d {{.*}} -> tensor<256x26x26x32xf32>
// CHECK: graph.max_pool2d {{.*}} -> tensor<256x13x13x32xf32>
// CHECK: graph.conv2d {{.*}} -> tensor<256x11x11x64xf32>
// CHECK: graph.max_pool2d {{.*}} -> tensor<256x5x5x64xf32>
// CHECK: graph.flatten {{.*}} -> tensor<256x1600xf32>
// CHECK: graph.dense {{.*}} -> tensor<256x10xf32>
graph.model @fashion_mnist_cnn {
  %x = graph.input "x" : tensor<256x28x28x1xf32>
  %k1 = graph.input "k1" : tensor<3x3x1x32xf32>
  %k2 = graph.input "k2" : tensor<3x3x32x64xf32>
  %k3 = graph.input "k3" : tensor<1600x10xf32>
  %c1 = graph.conv2d %x, %k1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<256x28x28x1xf32>, tensor<3x3x1x32xf32>) -> tensor<256x26x26x32xf32>
  %p1 = graph.max_pool2d %c1 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<256x26x26x32xf32> -> tensor<256x13x13x32xf32>
  %c2 = graph.conv2d %p1, %k2 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<256x13x13x32xf32>, tensor<3x3x32x64xf32>) -> tensor<256x11x11x64xf32>
  %p2 = graph.max_pool2d %c2 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<256x11x11x64xf32> -> tensor<256x5x5x64xf32>
  %f = graph.flatten %p2 : tensor<256x5x5x64xf32> -> tensor<256x1600xf32>
  %d = graph.dense %f, %k3 : (tensor<256x1600xf32>, tensor<1600x10xf32>) -> tensor<256x10xf32>
  graph.output %d : tensor<256x10xf32>
}

// -----

// Grouped: kernel [kh, kw, C / groups, F]; depthwise (groups = C) also
// takes Keras' [kh, kw, C, m] for F = C * m; groups = 1 prints nothing.
// CHECK-LABEL: graph.model @conv_groups
// CHECK: graph.conv2d {{.*}} dilations = [1, 1] groups = 2 : (tensor<2x7x9x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x5x7x6xf32>
// CHECK: graph.conv2d {{.*}} strides = [2, 2] padding = same dilations = [1, 1] groups = 4 : (tensor<2x7x9x4xf32>, tensor<3x3x4x2xf32>) -> tensor<2x4x5x8xf32>
// CHECK: graph.conv2d {{.*}} groups = 4 : (tensor<2x7x9x4xf32>, tensor<3x3x1x8xf32>) -> tensor<2x4x5x8xf32>
// CHECK: graph.conv2d {{.*}} dilations = [1, 1] : (tensor<2x7x9x4xf32>, tensor<1x1x4x3xf32>)
// CHECK: graph.conv2d_grad_input {{.*}} groups = 4 : (tensor<2x4x5x8xf32>, tensor<3x3x4x2xf32>) -> tensor<2x7x9x4xf32>
// CHECK: graph.conv2d_grad_kernel {{.*}} groups = 4 : (tensor<2x7x9x4xf32>, tensor<2x4x5x8xf32>) -> tensor<3x3x4x2xf32>
// CHECK: graph.fused_conv2d {{.*}} dilations = [1, 1] groups = 4 activation = relu : (tensor<2x7x9x4xf32>, tensor<3x3x4x2xf32>, tensor<8xf32>) -> tensor<2x4x5x8xf32>
graph.model @conv_groups {
  %x = graph.input "x" : tensor<2x7x9x4xf32>
  %k = graph.input "k" : tensor<3x3x2x6xf32>
  %dk = graph.input "dk" : tensor<3x3x4x2xf32>
  %gk = graph.input "gk" : tensor<3x3x1x8xf32>
  %pk = graph.input "pk" : tensor<1x1x4x3xf32>
  %b = graph.input "b" : tensor<8xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] groups = 2 : (tensor<2x7x9x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x5x7x6xf32>
  %d = graph.conv2d %x, %dk strides = [2, 2] padding = same dilations = [1, 1] groups = 4 : (tensor<2x7x9x4xf32>, tensor<3x3x4x2xf32>) -> tensor<2x4x5x8xf32>
  %g = graph.conv2d %x, %gk strides = [2, 2] padding = same dilations = [1, 1] groups = 4 : (tensor<2x7x9x4xf32>, tensor<3x3x1x8xf32>) -> tensor<2x4x5x8xf32>
  %p = graph.conv2d %x, %pk strides = [1, 1] padding = valid dilations = [1, 1] groups = 1 : (tensor<2x7x9x4xf32>, tensor<1x1x4x3xf32>) -> tensor<2x7x9x3xf32>
  %dx = graph.conv2d_grad_input %d, %dk strides = [2, 2] padding = same dilations = [1, 1] groups = 4 : (tensor<2x4x5x8xf32>, tensor<3x3x4x2xf32>) -> tensor<2x7x9x4xf32>
  %dw = graph.conv2d_grad_kernel %x, %d strides = [2, 2] padding = same dilations = [1, 1] groups = 4 : (tensor<2x7x9x4xf32>, tensor<2x4x5x8xf32>) -> tensor<3x3x4x2xf32>
  %f = graph.fused_conv2d %x, %dk bias %b strides = [2, 2] padding = same dilations = [1, 1] groups = 4 activation = relu : (tensor<2x7x9x4xf32>, tensor<3x3x4x2xf32>, tensor<8xf32>) -> tensor<2x4x5x8xf32>
  graph.output %y : tensor<2x5x7x6xf32>
}

// -----

// filter_layout = ohwi: the kernel is [F, kh, kw, C / groups] (a depthwise
// one [C * m, kh, kw, 1]); the window and the filters come from those axes,
// and hwio, the default, prints nothing.
// CHECK-LABEL: graph.model @conv_ohwi
// CHECK: graph.conv2d {{.*}} padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<6x3x5x4xf32>) -> tensor<2x5x5x6xf32>
// CHECK: graph.conv2d {{.*}} groups = 4 filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<8x3x3x1xf32>) -> tensor<2x4x5x8xf32>
// CHECK: graph.conv2d {{.*}} dilations = [1, 1] : (tensor<2x7x9x4xf32>, tensor<3x5x4x6xf32>) -> tensor<2x5x5x6xf32>
// CHECK: graph.conv2d_grad_input {{.*}} filter_layout = ohwi : (tensor<2x5x5x6xf32>, tensor<6x3x5x4xf32>) -> tensor<2x7x9x4xf32>
// CHECK: graph.conv2d_grad_kernel {{.*}} filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<2x5x5x6xf32>) -> tensor<6x3x5x4xf32>
// CHECK: graph.fused_conv2d_pool {{.*}} filter_layout = ohwi activation = relu {{.*}} : (tensor<2x7x9x4xf32>, tensor<6x3x5x4xf32>) -> (tensor<2x2x2x6xf32>, tensor<2x2x2x6xi32>)
graph.model @conv_ohwi {
  %x = graph.input "x" : tensor<2x7x9x4xf32>
  %k = graph.input "k" : tensor<6x3x5x4xf32>
  %dk = graph.input "dk" : tensor<8x3x3x1xf32>
  %hk = graph.input "hk" : tensor<3x5x4x6xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<6x3x5x4xf32>) -> tensor<2x5x5x6xf32>
  %d = graph.conv2d %x, %dk strides = [2, 2] padding = same dilations = [1, 1] groups = 4 filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<8x3x3x1xf32>) -> tensor<2x4x5x8xf32>
  %h = graph.conv2d %x, %hk strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = hwio : (tensor<2x7x9x4xf32>, tensor<3x5x4x6xf32>) -> tensor<2x5x5x6xf32>
  %dx = graph.conv2d_grad_input %y, %k strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x5x5x6xf32>, tensor<6x3x5x4xf32>) -> tensor<2x7x9x4xf32>
  %gk = graph.conv2d_grad_kernel %x, %y strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi : (tensor<2x7x9x4xf32>, tensor<2x5x5x6xf32>) -> tensor<6x3x5x4xf32>
  %p, %a = graph.fused_conv2d_pool %x, %k strides = [1, 1] padding = valid dilations = [1, 1] filter_layout = ohwi activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x7x9x4xf32>, tensor<6x3x5x4xf32>) -> (tensor<2x2x2x6xf32>, tensor<2x2x2x6xi32>)
  graph.output %y, %d, %h, %dx, %gk, %p : tensor<2x5x5x6xf32>, tensor<2x4x5x8xf32>, tensor<2x5x5x6xf32>, tensor<2x7x9x4xf32>, tensor<6x3x5x4xf32>, tensor<2x2x2x6xf32>
}
