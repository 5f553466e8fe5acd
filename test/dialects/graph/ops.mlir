// RUN: graph-opt %s --split-input-file | graph-opt --split-input-file | FileCheck %s
// RUN: graph-opt %s --split-input-file --mlir-print-op-generic | graph-opt --split-input-file | FileCheck %s

// Round trip of every graph op and attribute: the custom form, and the
// generic form read back, both print exactly the lines checked here.

// Variance-scaling initializers take only a seed; without one, none prints.
// CHECK-LABEL: graph.variable @glorot_uniform : tensor<3x3x1x32xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @glorot_normal : tensor<4x8xf32> = #graph.init<glorot_normal>
// CHECK-NEXT: graph.variable @he_normal : tensor<4x8xf32> = #graph.init<he_normal>
// CHECK-NEXT: graph.variable @he_uniform : tensor<4x8xf32> = #graph.init<he_uniform>
// CHECK-NEXT: graph.variable @lecun_normal : tensor<4x8xf32> = #graph.init<lecun_normal>
// CHECK-NEXT: graph.variable @lecun_uniform : tensor<4x8xf32> = #graph.init<lecun_uniform>
graph.variable @glorot_uniform : tensor<3x3x1x32xf32> = #graph.init<glorot_uniform>
graph.variable @glorot_normal : tensor<4x8xf32> = #graph.init<glorot_normal>
graph.variable @he_normal : tensor<4x8xf32> = #graph.init<he_normal>
graph.variable @he_uniform : tensor<4x8xf32> = #graph.init<he_uniform>
graph.variable @lecun_normal : tensor<4x8xf32> = #graph.init<lecun_normal>
graph.variable @lecun_uniform : tensor<4x8xf32> = #graph.init<lecun_uniform>

// -----

// The seed is any int64 and prints when given.
// CHECK-LABEL: graph.variable @glorot_uniform_seeded : tensor<4x8xf32> = #graph.init<glorot_uniform, seed = 42>
// CHECK-NEXT: graph.variable @glorot_normal_seeded : tensor<4x8xf32> = #graph.init<glorot_normal, seed = 0>
// CHECK-NEXT: graph.variable @he_normal_seeded : tensor<4x8xf32> = #graph.init<he_normal, seed = -1>
// CHECK-NEXT: graph.variable @he_uniform_seeded : tensor<4x8xf32> = #graph.init<he_uniform, seed = 7>
// CHECK-NEXT: graph.variable @lecun_normal_seeded : tensor<4x8xf32> = #graph.init<lecun_normal, seed = 9223372036854775807>
// CHECK-NEXT: graph.variable @lecun_uniform_seeded : tensor<4x8xf32> = #graph.init<lecun_uniform, seed = 3>
graph.variable @glorot_uniform_seeded : tensor<4x8xf32> = #graph.init<glorot_uniform, seed = 42>
graph.variable @glorot_normal_seeded : tensor<4x8xf32> = #graph.init<glorot_normal, seed = 0>
graph.variable @he_normal_seeded : tensor<4x8xf32> = #graph.init<he_normal, seed = -1>
graph.variable @he_uniform_seeded : tensor<4x8xf32> = #graph.init<he_uniform, seed = 7>
graph.variable @lecun_normal_seeded : tensor<4x8xf32> = #graph.init<lecun_normal, seed = 9223372036854775807>
graph.variable @lecun_uniform_seeded : tensor<4x8xf32> = #graph.init<lecun_uniform, seed = 3>

// -----

// zeros and ones take no parameters; constant always prints its value, in the
// shortest form that reads back as the same double, always with a '.'.
// CHECK-LABEL: graph.variable @"dense/bias" : tensor<64xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @"batch_normalization/gamma" : tensor<64xf32> = #graph.init<ones>
// CHECK-NEXT: graph.variable @constant : tensor<64xf32> = #graph.init<constant, value = 0.1>
// CHECK-NEXT: graph.variable @constant_default : tensor<64xf32> = #graph.init<constant, value = 0.0>
// CHECK-NEXT: graph.variable @constant_negative : tensor<64xf32> = #graph.init<constant, value = -2.5>
// CHECK-NEXT: graph.variable @constant_large : tensor<64xf32> = #graph.init<constant, value = 1.0e+30>
// CHECK-NEXT: graph.variable @constant_small : tensor<64xf32> = #graph.init<constant, value = 1.0e-07>
// CHECK-NEXT: graph.variable @constant_integral : tensor<64xf32> = #graph.init<constant, value = 3.0>
// CHECK-NEXT: graph.variable @constant_neg_zero : tensor<64xf32> = #graph.init<constant, value = -0.0>
graph.variable @"dense/bias" : tensor<64xf32> = #graph.init<zeros>
graph.variable @"batch_normalization/gamma" : tensor<64xf32> = #graph.init<ones>
graph.variable @constant : tensor<64xf32> = #graph.init<constant, value = 0.1>
graph.variable @constant_default : tensor<64xf32> = #graph.init<constant>
graph.variable @constant_negative : tensor<64xf32> = #graph.init<constant, value = -2.5>
graph.variable @constant_large : tensor<64xf32> = #graph.init<constant, value = 1.0e30>
graph.variable @constant_small : tensor<64xf32> = #graph.init<constant, value = 1.0e-07>
graph.variable @constant_integral : tensor<64xf32> = #graph.init<constant, value = 3.>
graph.variable @constant_neg_zero : tensor<64xf32> = #graph.init<constant, value = -0.0>

// -----

// random_normal prints mean and stddev (defaults 0.0 and 0.05) and the seed
// when given; parameters parse in any order and print in a fixed one.
// CHECK-LABEL: graph.variable @random_normal : tensor<4x8xf32> = #graph.init<random_normal, mean = 1.0, stddev = 0.5, seed = 7>
// CHECK-NEXT: graph.variable @random_normal_default : tensor<4x8xf32> = #graph.init<random_normal, mean = 0.0, stddev = 0.05>
// CHECK-NEXT: graph.variable @random_normal_stddev : tensor<4x8xf32> = #graph.init<random_normal, mean = 0.0, stddev = 2.0>
// CHECK-NEXT: graph.variable @random_normal_reordered : tensor<4x8xf32> = #graph.init<random_normal, mean = -1.0, stddev = 0.01, seed = 1>
graph.variable @random_normal : tensor<4x8xf32> = #graph.init<random_normal, mean = 1.0, stddev = 0.5, seed = 7>
graph.variable @random_normal_default : tensor<4x8xf32> = #graph.init<random_normal>
graph.variable @random_normal_stddev : tensor<4x8xf32> = #graph.init<random_normal, stddev = 2.0>
graph.variable @random_normal_reordered : tensor<4x8xf32> = #graph.init<random_normal, seed = 1, stddev = 0.01, mean = -1.0>

// -----

// random_uniform prints minval and maxval (defaults -0.05 and 0.05).
// CHECK-LABEL: graph.variable @random_uniform : tensor<4x8xf32> = #graph.init<random_uniform, minval = -1.0, maxval = 2.5, seed = 11>
// CHECK-NEXT: graph.variable @random_uniform_default : tensor<4x8xf32> = #graph.init<random_uniform, minval = -0.05, maxval = 0.05>
graph.variable @random_uniform : tensor<4x8xf32> = #graph.init<random_uniform, minval = -1.0, maxval = 2.5, seed = 11>
graph.variable @random_uniform_default : tensor<4x8xf32> = #graph.init<random_uniform>

// -----

// truncated_normal takes the parameters of random_normal.
// CHECK-LABEL: graph.variable @truncated_normal : tensor<4x8xf32> = #graph.init<truncated_normal, mean = 0.5, stddev = 0.02, seed = 5>
// CHECK-NEXT: graph.variable @truncated_normal_default : tensor<4x8xf32> = #graph.init<truncated_normal, mean = 0.0, stddev = 0.05>
graph.variable @truncated_normal : tensor<4x8xf32> = #graph.init<truncated_normal, mean = 0.5, stddev = 0.02, seed = 5>
graph.variable @truncated_normal_default : tensor<4x8xf32> = #graph.init<truncated_normal>

// -----

// trainable = false prints; the default true is elided. Any float element
// type and rank is a variable.
// CHECK-LABEL: graph.variable @"batch_normalization/moving_mean" : tensor<16xf32> = #graph.init<zeros> {trainable = false}
// CHECK-NEXT: graph.variable @explicitly_trainable : tensor<16xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.variable @f16 : tensor<16xf16> = #graph.init<ones>
// CHECK-NEXT: graph.variable @bf16 : tensor<2x3x4x5x6xbf16> = #graph.init<he_normal>
// CHECK-NEXT: graph.variable @f64_scalar : tensor<f64> = #graph.init<constant, value = 1.5>
graph.variable @"batch_normalization/moving_mean" : tensor<16xf32> = #graph.init<zeros> {trainable = false}
graph.variable @explicitly_trainable : tensor<16xf32> = #graph.init<zeros> {trainable = true}
graph.variable @f16 : tensor<16xf16> = #graph.init<ones>
graph.variable @bf16 : tensor<2x3x4x5x6xbf16> = #graph.init<he_normal>
graph.variable @f64_scalar : tensor<f64> = #graph.init<constant, value = 1.5>

// -----

// conv2d, valid padding: 28 - 3 + 1 = 26; the kernel is read from a variable.
// CHECK-LABEL: graph.variable @"conv2d/kernel" : tensor<3x3x1x32xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.model @conv2d_valid {
// CHECK-NEXT: %[[X:.*]] = graph.input "image" : tensor<8x28x28x1xf32>
// CHECK-NEXT: %[[K:.*]] = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x32xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.conv2d %[[X]], %[[K]] strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<8x28x28x1xf32>, tensor<3x3x1x32xf32>) -> tensor<8x26x26x32xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x26x26x32xf32>
// CHECK-NEXT: }
graph.variable @"conv2d/kernel" : tensor<3x3x1x32xf32> = #graph.init<glorot_uniform>
graph.model @conv2d_valid {
  %x = graph.input "image" : tensor<8x28x28x1xf32>
  %k = graph.read_variable @"conv2d/kernel" : tensor<3x3x1x32xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<8x28x28x1xf32>, tensor<3x3x1x32xf32>) -> tensor<8x26x26x32xf32>
  graph.output %y : tensor<8x26x26x32xf32>
}

// -----

// conv2d, same padding keeps H and W at stride 1 whatever the kernel size.
// CHECK-LABEL: graph.model @conv2d_same {
// CHECK-NEXT: %[[X:.*]] = graph.input "image" : tensor<8x28x28x3xf32>
// CHECK-NEXT: %[[K:.*]] = graph.input "kernel" : tensor<5x5x3x16xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.conv2d %[[X]], %[[K]] strides = [1, 1] padding = same dilations = [1, 1] : (tensor<8x28x28x3xf32>, tensor<5x5x3x16xf32>) -> tensor<8x28x28x16xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x28x28x16xf32>
// CHECK-NEXT: }
graph.model @conv2d_same {
  %x = graph.input "image" : tensor<8x28x28x3xf32>
  %k = graph.input "kernel" : tensor<5x5x3x16xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = same dilations = [1, 1] : (tensor<8x28x28x3xf32>, tensor<5x5x3x16xf32>) -> tensor<8x28x28x16xf32>
  graph.output %y : tensor<8x28x28x16xf32>
}

// -----

// conv2d, strides [2, 3], valid: floor((28 - 3) / 2) + 1 = 13, floor((27 - 3) / 3) + 1 = 9.
// CHECK-LABEL: graph.model @conv2d_strided {
// CHECK-NEXT: %[[X:.*]] = graph.input "image" : tensor<4x28x27x1xf32>
// CHECK-NEXT: %[[K:.*]] = graph.input "kernel" : tensor<3x3x1x8xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.conv2d %[[X]], %[[K]] strides = [2, 3] padding = valid dilations = [1, 1] : (tensor<4x28x27x1xf32>, tensor<3x3x1x8xf32>) -> tensor<4x13x9x8xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<4x13x9x8xf32>
// CHECK-NEXT: }
graph.model @conv2d_strided {
  %x = graph.input "image" : tensor<4x28x27x1xf32>
  %k = graph.input "kernel" : tensor<3x3x1x8xf32>
  %y = graph.conv2d %x, %k strides = [2, 3] padding = valid dilations = [1, 1] : (tensor<4x28x27x1xf32>, tensor<3x3x1x8xf32>) -> tensor<4x13x9x8xf32>
  graph.output %y : tensor<4x13x9x8xf32>
}

// -----

// conv2d, dilations [2, 3], valid: extents 5 and 7, so 24 and 22.
// CHECK-LABEL: graph.model @conv2d_dilated {
// CHECK-NEXT: %[[X:.*]] = graph.input "image" : tensor<4x28x28x2xf32>
// CHECK-NEXT: %[[K:.*]] = graph.input "kernel" : tensor<3x3x2x8xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.conv2d %[[X]], %[[K]] strides = [1, 1] padding = valid dilations = [2, 3] : (tensor<4x28x28x2xf32>, tensor<3x3x2x8xf32>) -> tensor<4x24x22x8xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<4x24x22x8xf32>
// CHECK-NEXT: }
graph.model @conv2d_dilated {
  %x = graph.input "image" : tensor<4x28x28x2xf32>
  %k = graph.input "kernel" : tensor<3x3x2x8xf32>
  %y = graph.conv2d %x, %k strides = [1, 1] padding = valid dilations = [2, 3] : (tensor<4x28x28x2xf32>, tensor<3x3x2x8xf32>) -> tensor<4x24x22x8xf32>
  graph.output %y : tensor<4x24x22x8xf32>
}

// -----

// max_pool2d, valid.
// CHECK-LABEL: graph.model @max_pool2d_valid {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x26x26x32xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.max_pool2d %[[X]] pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<8x26x26x32xf32> -> tensor<8x13x13x32xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x13x13x32xf32>
// CHECK-NEXT: }
graph.model @max_pool2d_valid {
  %x = graph.input "x" : tensor<8x26x26x32xf32>
  %y = graph.max_pool2d %x pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<8x26x26x32xf32> -> tensor<8x13x13x32xf32>
  graph.output %y : tensor<8x13x13x32xf32>
}

// -----

// max_pool2d, same: ceil(7 / 2) = 4.
// CHECK-LABEL: graph.model @max_pool2d_same {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x7x7x32xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.max_pool2d %[[X]] pool_size = [3, 3] strides = [2, 2] padding = same : tensor<8x7x7x32xf32> -> tensor<8x4x4x32xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x4x4x32xf32>
// CHECK-NEXT: }
graph.model @max_pool2d_same {
  %x = graph.input "x" : tensor<8x7x7x32xf32>
  %y = graph.max_pool2d %x pool_size = [3, 3] strides = [2, 2] padding = same : tensor<8x7x7x32xf32> -> tensor<8x4x4x32xf32>
  graph.output %y : tensor<8x4x4x32xf32>
}

// -----

// avg_pool2d, valid.
// CHECK-LABEL: graph.model @avg_pool2d_valid {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x9x9x4xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.avg_pool2d %[[X]] pool_size = [3, 3] strides = [3, 3] padding = valid : tensor<8x9x9x4xf32> -> tensor<8x3x3x4xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x3x3x4xf32>
// CHECK-NEXT: }
graph.model @avg_pool2d_valid {
  %x = graph.input "x" : tensor<8x9x9x4xf32>
  %y = graph.avg_pool2d %x pool_size = [3, 3] strides = [3, 3] padding = valid : tensor<8x9x9x4xf32> -> tensor<8x3x3x4xf32>
  graph.output %y : tensor<8x3x3x4xf32>
}

// -----

// avg_pool2d, same at stride 1 keeps H and W.
// CHECK-LABEL: graph.model @avg_pool2d_same {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x5x6x4xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.avg_pool2d %[[X]] pool_size = [2, 2] strides = [1, 1] padding = same : tensor<8x5x6x4xf32> -> tensor<8x5x6x4xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x5x6x4xf32>
// CHECK-NEXT: }
graph.model @avg_pool2d_same {
  %x = graph.input "x" : tensor<8x5x6x4xf32>
  %y = graph.avg_pool2d %x pool_size = [2, 2] strides = [1, 1] padding = same : tensor<8x5x6x4xf32> -> tensor<8x5x6x4xf32>
  graph.output %y : tensor<8x5x6x4xf32>
}

// -----

// global_avg_pool2d: NHWC to NC.
// CHECK-LABEL: graph.model @global_avg_pool2d {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x7x7x64xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.global_avg_pool2d %[[X]] : tensor<8x7x7x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<8x64xf32>
// CHECK-NEXT: }
graph.model @global_avg_pool2d {
  %x = graph.input "x" : tensor<8x7x7x64xf32>
  %y = graph.global_avg_pool2d %x : tensor<8x7x7x64xf32> -> tensor<8x64xf32>
  graph.output %y : tensor<8x64xf32>
}

// -----

// dense on [batch, features] with its bias, both read from variables.
// CHECK-LABEL: graph.variable @"dense/kernel" : tensor<784x128xf32> = #graph.init<glorot_uniform>
// CHECK-NEXT: graph.variable @"dense/bias" : tensor<128xf32> = #graph.init<zeros>
// CHECK-NEXT: graph.model @dense_rank2 {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<32x784xf32>
// CHECK-NEXT: %[[K:.*]] = graph.read_variable @"dense/kernel" : tensor<784x128xf32>
// CHECK-NEXT: %[[B:.*]] = graph.read_variable @"dense/bias" : tensor<128xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.dense %[[X]], %[[K]] : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.bias_add %[[Y]], %[[B]] : tensor<32x128xf32>, tensor<128xf32>
// CHECK-NEXT: graph.output %[[Z]] : tensor<32x128xf32>
// CHECK-NEXT: }
graph.variable @"dense/kernel" : tensor<784x128xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/bias" : tensor<128xf32> = #graph.init<zeros>
graph.model @dense_rank2 {
  %x = graph.input "x" : tensor<32x784xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<784x128xf32>
  %b = graph.read_variable @"dense/bias" : tensor<128xf32>
  %y = graph.dense %x, %k : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
  %z = graph.bias_add %y, %b : tensor<32x128xf32>, tensor<128xf32>
  graph.output %z : tensor<32x128xf32>
}

// -----

// dense on a rank-3 input contracts the last axis only.
// CHECK-LABEL: graph.model @dense_rank3 {
// CHECK-NEXT: %[[X:.*]] = graph.input "tokens" : tensor<32x10x16xf32>
// CHECK-NEXT: %[[K:.*]] = graph.input "kernel" : tensor<16x4xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.dense %[[X]], %[[K]] : (tensor<32x10x16xf32>, tensor<16x4xf32>) -> tensor<32x10x4xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<32x10x4xf32>
// CHECK-NEXT: }
graph.model @dense_rank3 {
  %x = graph.input "tokens" : tensor<32x10x16xf32>
  %k = graph.input "kernel" : tensor<16x4xf32>
  %y = graph.dense %x, %k : (tensor<32x10x16xf32>, tensor<16x4xf32>) -> tensor<32x10x4xf32>
  graph.output %y : tensor<32x10x4xf32>
}

// -----

// bias_add along the channel axis of an NHWC tensor.
// CHECK-LABEL: graph.model @bias_add_nhwc {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<2x5x5x3xf16>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<3xf16>
// CHECK-NEXT: %[[Y:.*]] = graph.bias_add %[[X]], %[[B]] : tensor<2x5x5x3xf16>, tensor<3xf16>
// CHECK-NEXT: graph.output %[[Y]] : tensor<2x5x5x3xf16>
// CHECK-NEXT: }
graph.model @bias_add_nhwc {
  %x = graph.input "x" : tensor<2x5x5x3xf16>
  %b = graph.input "b" : tensor<3xf16>
  %y = graph.bias_add %x, %b : tensor<2x5x5x3xf16>, tensor<3xf16>
  graph.output %y : tensor<2x5x5x3xf16>
}

// -----

// relu.
// CHECK-LABEL: graph.model @relu {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.relu %[[X]] : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @relu {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.relu %x : tensor<4x10xf32>
  graph.output %y : tensor<4x10xf32>
}

// -----

// sigmoid.
// CHECK-LABEL: graph.model @sigmoid {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.sigmoid %[[X]] : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[Y]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @sigmoid {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.sigmoid %x : tensor<4x10xf32>
  graph.output %y : tensor<4x10xf32>
}

// -----

// tanh, on bf16.
// CHECK-LABEL: graph.model @tanh {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xbf16>
// CHECK-NEXT: %[[Y:.*]] = graph.tanh %[[X]] : tensor<4x10xbf16>
// CHECK-NEXT: graph.output %[[Y]] : tensor<4x10xbf16>
// CHECK-NEXT: }
graph.model @tanh {
  %x = graph.input "x" : tensor<4x10xbf16>
  %y = graph.tanh %x : tensor<4x10xbf16>
  graph.output %y : tensor<4x10xbf16>
}

// -----

// elu: alpha prints unless it is the default 1.0.
// CHECK-LABEL: graph.model @elu {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.elu %[[X]] {alpha = 5.000000e-01 : f64} : tensor<4x10xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.elu %[[Y]] : tensor<4x10xf32>
// CHECK-NEXT: %[[W:.*]] = graph.elu %[[Z]] : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[W]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @elu {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.elu %x {alpha = 0.5 : f64} : tensor<4x10xf32>
  %z = graph.elu %y : tensor<4x10xf32>
  %w = graph.elu %z {alpha = 1.0 : f64} : tensor<4x10xf32>
  graph.output %w : tensor<4x10xf32>
}

// -----

// leaky_relu: alpha prints unless it is the default 0.2.
// CHECK-LABEL: graph.model @leaky_relu {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.leaky_relu %[[X]] {alpha = 1.000000e-02 : f64} : tensor<4x10xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.leaky_relu %[[Y]] : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[Z]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @leaky_relu {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.leaky_relu %x {alpha = 0.01 : f64} : tensor<4x10xf32>
  %z = graph.leaky_relu %y : tensor<4x10xf32>
  graph.output %z : tensor<4x10xf32>
}

// -----

// gelu: exact by default, the tanh approximation with {approximate}.
// CHECK-LABEL: graph.model @gelu {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.gelu %[[X]] {approximate} : tensor<4x10xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.gelu %[[Y]] : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[Z]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @gelu {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.gelu %x {approximate} : tensor<4x10xf32>
  %z = graph.gelu %y : tensor<4x10xf32>
  graph.output %z : tensor<4x10xf32>
}

// -----

// softmax: axis prints unless it is the default -1; negative axes count from
// the end.
// CHECK-LABEL: graph.model @softmax {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x3x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.softmax %[[X]] : tensor<4x3x10xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.softmax %[[Y]] {axis = 1 : i64} : tensor<4x3x10xf32>
// CHECK-NEXT: %[[W:.*]] = graph.softmax %[[Z]] {axis = -3 : i64} : tensor<4x3x10xf32>
// CHECK-NEXT: graph.output %[[W]] : tensor<4x3x10xf32>
// CHECK-NEXT: }
graph.model @softmax {
  %x = graph.input "x" : tensor<4x3x10xf32>
  %y = graph.softmax %x : tensor<4x3x10xf32>
  %z = graph.softmax %y {axis = 1} : tensor<4x3x10xf32>
  %w = graph.softmax %z {axis = -3} : tensor<4x3x10xf32>
  graph.output %w : tensor<4x3x10xf32>
}

// -----

// dropout: rate and seed are required and always print.
// CHECK-LABEL: graph.model @dropout {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x10xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.dropout %[[X]] {rate = 5.000000e-01 : f64, seed = 1337 : i64} : tensor<4x10xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.dropout %[[Y]] {rate = 0.000000e+00 : f64, seed = 0 : i64} : tensor<4x10xf32>
// CHECK-NEXT: graph.output %[[Z]] : tensor<4x10xf32>
// CHECK-NEXT: }
graph.model @dropout {
  %x = graph.input "x" : tensor<4x10xf32>
  %y = graph.dropout %x {rate = 0.5, seed = 1337} : tensor<4x10xf32>
  %z = graph.dropout %y {rate = 0.0, seed = 0} : tensor<4x10xf32>
  graph.output %z : tensor<4x10xf32>
}

// -----

// flatten keeps the batch axis; a rank-1 input becomes [batch, 1].
// CHECK-LABEL: graph.model @flatten {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x5x5x64xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.flatten %[[X]] : tensor<8x5x5x64xf32> -> tensor<8x1600xf32>
// CHECK-NEXT: %[[V:.*]] = graph.input "v" : tensor<8xf32>
// CHECK-NEXT: %[[W:.*]] = graph.flatten %[[V]] : tensor<8xf32> -> tensor<8x1xf32>
// CHECK-NEXT: graph.output %[[Y]], %[[W]] : tensor<8x1600xf32>, tensor<8x1xf32>
// CHECK-NEXT: }
graph.model @flatten {
  %x = graph.input "x" : tensor<8x5x5x64xf32>
  %y = graph.flatten %x : tensor<8x5x5x64xf32> -> tensor<8x1600xf32>
  %v = graph.input "v" : tensor<8xf32>
  %w = graph.flatten %v : tensor<8xf32> -> tensor<8x1xf32>
  graph.output %y, %w : tensor<8x1600xf32>, tensor<8x1xf32>
}

// -----

// reshape keeps the batch axis and the element count.
// CHECK-LABEL: graph.model @reshape {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x784xf32>
// CHECK-NEXT: %[[Y:.*]] = graph.reshape %[[X]] : tensor<8x784xf32> -> tensor<8x28x28x1xf32>
// CHECK-NEXT: %[[Z:.*]] = graph.reshape %[[Y]] : tensor<8x28x28x1xf32> -> tensor<8x784xf32>
// CHECK-NEXT: graph.output %[[Z]] : tensor<8x784xf32>
// CHECK-NEXT: }
graph.model @reshape {
  %x = graph.input "x" : tensor<8x784xf32>
  %y = graph.reshape %x : tensor<8x784xf32> -> tensor<8x28x28x1xf32>
  %z = graph.reshape %y : tensor<8x28x28x1xf32> -> tensor<8x784xf32>
  graph.output %z : tensor<8x784xf32>
}

// -----

// add with two and with three inputs.
// CHECK-LABEL: graph.model @add {
// CHECK-NEXT: %[[A:.*]] = graph.input "a" : tensor<4x8x8x16xf32>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<4x8x8x16xf32>
// CHECK-NEXT: %[[C:.*]] = graph.input "c" : tensor<4x8x8x16xf32>
// CHECK-NEXT: %[[S2:.*]] = graph.add %[[A]], %[[B]] : tensor<4x8x8x16xf32>
// CHECK-NEXT: %[[S3:.*]] = graph.add %[[A]], %[[B]], %[[C]] : tensor<4x8x8x16xf32>
// CHECK-NEXT: graph.output %[[S2]], %[[S3]] : tensor<4x8x8x16xf32>, tensor<4x8x8x16xf32>
// CHECK-NEXT: }
graph.model @add {
  %a = graph.input "a" : tensor<4x8x8x16xf32>
  %b = graph.input "b" : tensor<4x8x8x16xf32>
  %c = graph.input "c" : tensor<4x8x8x16xf32>
  %s2 = graph.add %a, %b : tensor<4x8x8x16xf32>
  %s3 = graph.add %a, %b, %c : tensor<4x8x8x16xf32>
  graph.output %s2, %s3 : tensor<4x8x8x16xf32>, tensor<4x8x8x16xf32>
}

// -----

// concatenate on the last axis (negative) and on an inner axis, 3 inputs.
// CHECK-LABEL: graph.model @concatenate {
// CHECK-NEXT: %[[A:.*]] = graph.input "a" : tensor<4x8x8x16xf32>
// CHECK-NEXT: %[[B:.*]] = graph.input "b" : tensor<4x8x8x32xf32>
// CHECK-NEXT: %[[C:.*]] = graph.input "c" : tensor<4x8x3x16xf32>
// CHECK-NEXT: %[[D:.*]] = graph.concatenate %[[A]], %[[B]] axis = -1 : (tensor<4x8x8x16xf32>, tensor<4x8x8x32xf32>) -> tensor<4x8x8x48xf32>
// CHECK-NEXT: %[[E:.*]] = graph.concatenate %[[A]], %[[C]], %[[A]] axis = 2 : (tensor<4x8x8x16xf32>, tensor<4x8x3x16xf32>, tensor<4x8x8x16xf32>) -> tensor<4x8x19x16xf32>
// CHECK-NEXT: graph.output %[[D]], %[[E]] : tensor<4x8x8x48xf32>, tensor<4x8x19x16xf32>
// CHECK-NEXT: }
graph.model @concatenate {
  %a = graph.input "a" : tensor<4x8x8x16xf32>
  %b = graph.input "b" : tensor<4x8x8x32xf32>
  %c = graph.input "c" : tensor<4x8x3x16xf32>
  %d = graph.concatenate %a, %b axis = -1 : (tensor<4x8x8x16xf32>, tensor<4x8x8x32xf32>) -> tensor<4x8x8x48xf32>
  %e = graph.concatenate %a, %c, %a axis = 2 : (tensor<4x8x8x16xf32>, tensor<4x8x3x16xf32>, tensor<4x8x8x16xf32>) -> tensor<4x8x19x16xf32>
  graph.output %d, %e : tensor<4x8x8x48xf32>, tensor<4x8x19x16xf32>
}

// -----

// batch_norm with gamma and beta, with neither, with gamma only and with beta
// only; epsilon and momentum print unless they are the defaults 1e-3 and 0.99.
// CHECK-LABEL: graph.model @batch_norm {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[MEAN:.*]] = graph.input "mean" : tensor<16xf32>
// CHECK-NEXT: %[[VAR:.*]] = graph.input "var" : tensor<16xf32>
// CHECK-NEXT: %[[GAMMA:.*]] = graph.input "gamma" : tensor<16xf32>
// CHECK-NEXT: %[[BETA:.*]] = graph.input "beta" : tensor<16xf32>
// CHECK-NEXT: %[[FULL:.*]] = graph.batch_norm %[[X]], %[[MEAN]], %[[VAR]] gamma %[[GAMMA]] beta %[[BETA]] : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[BARE:.*]] = graph.batch_norm %[[FULL]], %[[MEAN]], %[[VAR]] {epsilon = 1.000000e-05 : f64, momentum = 9.000000e-01 : f64} : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[SCALED:.*]] = graph.batch_norm %[[BARE]], %[[MEAN]], %[[VAR]] gamma %[[GAMMA]] : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[CENTERED:.*]] = graph.batch_norm %[[SCALED]], %[[MEAN]], %[[VAR]] beta %[[BETA]] : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: graph.output %[[CENTERED]] : tensor<8x5x5x16xf32>
// CHECK-NEXT: }
graph.model @batch_norm {
  %x = graph.input "x" : tensor<8x5x5x16xf32>
  %mean = graph.input "mean" : tensor<16xf32>
  %var = graph.input "var" : tensor<16xf32>
  %gamma = graph.input "gamma" : tensor<16xf32>
  %beta = graph.input "beta" : tensor<16xf32>
  %full = graph.batch_norm %x, %mean, %var gamma %gamma beta %beta : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  %bare = graph.batch_norm %full, %mean, %var {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64} : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  %scaled = graph.batch_norm %bare, %mean, %var gamma %gamma : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  %centered = graph.batch_norm %scaled, %mean, %var beta %beta {epsilon = 1.0e-03 : f64, momentum = 0.99 : f64} : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  graph.output %centered : tensor<8x5x5x16xf32>
}

// -----

// batch_norm_inference_grad with and without gamma; epsilon prints unless it
// is the default 1e-3.
// CHECK-LABEL: graph.model @batch_norm_inference_grad {
// CHECK-NEXT: %[[DY:.*]] = graph.input "dy" : tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[VAR:.*]] = graph.input "var" : tensor<16xf32>
// CHECK-NEXT: %[[GAMMA:.*]] = graph.input "gamma" : tensor<16xf32>
// CHECK-NEXT: %[[SCALED:.*]] = graph.batch_norm_inference_grad %[[DY]], %[[VAR]] gamma %[[GAMMA]] : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: %[[BARE:.*]] = graph.batch_norm_inference_grad %[[SCALED]], %[[VAR]] {epsilon = 1.000000e-05 : f64} : (tensor<8x5x5x16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
// CHECK-NEXT: graph.output %[[BARE]] : tensor<8x5x5x16xf32>
graph.model @batch_norm_inference_grad {
  %dy = graph.input "dy" : tensor<8x5x5x16xf32>
  %var = graph.input "var" : tensor<16xf32>
  %gamma = graph.input "gamma" : tensor<16xf32>
  %scaled = graph.batch_norm_inference_grad %dy, %var gamma %gamma : (tensor<8x5x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  %bare = graph.batch_norm_inference_grad %scaled, %var {epsilon = 1.0e-05 : f64} : (tensor<8x5x5x16xf32>, tensor<16xf32>) -> tensor<8x5x5x16xf32>
  graph.output %bare : tensor<8x5x5x16xf32>
}

// categorical_crossentropy on probabilities and on logits.
// CHECK-LABEL: graph.model @categorical_crossentropy {
// CHECK-NEXT: %[[P:.*]] = graph.input "p" : tensor<8x10xf32>
// CHECK-NEXT: %[[L:.*]] = graph.input "l" : tensor<8x10xf32>
// CHECK-NEXT: %[[PROBS:.*]] = graph.categorical_crossentropy %[[P]], %[[L]] : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
// CHECK-NEXT: %[[LOGITS:.*]] = graph.categorical_crossentropy %[[P]], %[[L]] from_logits : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
// CHECK-NEXT: graph.output %[[PROBS]], %[[LOGITS]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: }
graph.model @categorical_crossentropy {
  %p = graph.input "p" : tensor<8x10xf32>
  %l = graph.input "l" : tensor<8x10xf32>
  %probs = graph.categorical_crossentropy %p, %l : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
  %logits = graph.categorical_crossentropy %p, %l from_logits : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
  graph.output %probs, %logits : tensor<f32>, tensor<f32>
}

// -----

// The element-wise losses: a kind, targets of the predictions' type, the
// options of the kinds that take them, sample weights, and the gradient.
// CHECK-LABEL: graph.model @pointwise_loss {
// CHECK-NEXT: %[[P:.*]] = graph.input "p" : tensor<8x3xf32>
// CHECK-NEXT: %[[T:.*]] = graph.input "t" : tensor<8x3xf32>
// CHECK-NEXT: %[[W:.*]] = graph.input "w" : tensor<8xf32>
// CHECK-NEXT: %[[MSE:.*]] = graph.pointwise_loss mean_squared_error %[[P]], %[[T]] : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[BCE:.*]] = graph.pointwise_loss binary_crossentropy %[[P]], %[[T]] weights %[[W]] from_logits label_smoothing = 2.000000e-01 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<f32>
// CHECK-NEXT: %[[HUBER:.*]] = graph.pointwise_loss huber %[[P]], %[[T]] delta = 1.500000e+00 : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC:.*]] = graph.pointwise_loss binary_accuracy %[[P]], %[[T]] : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[G:.*]] = graph.pointwise_loss_grad huber %[[P]], %[[T]] delta = 1.500000e+00 : tensor<8x3xf32>
// CHECK-NEXT: graph.output %[[MSE]], %[[BCE]], %[[HUBER]], %[[ACC]], %[[G]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8x3xf32>
// CHECK-NEXT: }
graph.model @pointwise_loss {
  %p = graph.input "p" : tensor<8x3xf32>
  %t = graph.input "t" : tensor<8x3xf32>
  %w = graph.input "w" : tensor<8xf32>
  %mse = graph.pointwise_loss mean_squared_error %p, %t : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %bce = graph.pointwise_loss binary_crossentropy %p, %t weights %w from_logits label_smoothing = 0.2 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<f32>
  %huber = graph.pointwise_loss huber %p, %t delta = 1.5 : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %acc = graph.pointwise_loss binary_accuracy %p, %t : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %g = graph.pointwise_loss_grad huber %p, %t delta = 1.5 : tensor<8x3xf32>
  graph.output %mse, %bce, %huber, %acc, %g : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8x3xf32>
}

// -----

// The focal cross-entropies' options, the row kinds, and Dice and Tversky:
// the batch's sums, the loss of the sums (weighted), its gradient.
// CHECK-LABEL: graph.model @focal_row_overlap {
// CHECK: %[[P:.*]] = graph.input "p" : tensor<8x3xf32>
// CHECK: %[[T:.*]] = graph.input "t" : tensor<8x3xf32>
// CHECK: %[[W:.*]] = graph.input "w" : tensor<8xf32>
// CHECK-NEXT: %[[BF:.*]] = graph.pointwise_loss binary_focal_crossentropy %[[P]], %[[T]] from_logits label_smoothing = 1.000000e-01 alpha = 4.000000e-01 gamma = 1.500000e+00 apply_class_balancing : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[CF:.*]] = graph.pointwise_loss categorical_focal_crossentropy %[[P]], %[[T]] weights %[[W]] alpha = 6.000000e-01 gamma = 3.000000e+00 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<f32>
// CHECK-NEXT: %[[CS:.*]] = graph.pointwise_loss cosine_similarity %[[P]], %[[T]] : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[CG:.*]] = graph.pointwise_loss_grad categorical_hinge %[[P]], %[[T]] : tensor<8x3xf32>
// CHECK-NEXT: %[[S:.*]] = graph.overlap_sums %[[P]], %[[T]] weights %[[W]] : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<5xf32>
// CHECK-NEXT: %[[D:.*]] = graph.overlap_loss dice %[[S]] : tensor<5xf32> -> tensor<f32>
// CHECK-NEXT: %[[TV:.*]] = graph.overlap_loss tversky %[[S]] alpha = 2.500000e-01 beta = 7.500000e-01 : tensor<5xf32> -> tensor<f32>
// CHECK-NEXT: %[[G:.*]] = graph.overlap_loss_grad tversky %[[T]], %[[S]] weights %[[W]] alpha = 2.500000e-01 beta = 7.500000e-01 {replicas = 2 : i64} : tensor<8x3xf32>, tensor<5xf32>, tensor<8xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[DS:.*]] = graph.overlap_loss dice %[[S]] sum_reduction : tensor<5xf32> -> tensor<f32>
// CHECK-NEXT: %[[GS:.*]] = graph.overlap_loss_grad dice %[[T]], %[[S]] weights %[[W]] sum_reduction : tensor<8x3xf32>, tensor<5xf32>, tensor<8xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[PG:.*]] = graph.pointwise_loss_grad huber %[[P]], %[[T]] weights %[[W]] : tensor<8x3xf32>, tensor<8xf32>
graph.model @focal_row_overlap {
  %p = graph.input "p" : tensor<8x3xf32>
  %t = graph.input "t" : tensor<8x3xf32>
  %w = graph.input "w" : tensor<8xf32>
  %bf = graph.pointwise_loss binary_focal_crossentropy %p, %t from_logits label_smoothing = 0.1 alpha = 0.4 gamma = 1.5 apply_class_balancing : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %cf = graph.pointwise_loss categorical_focal_crossentropy %p, %t weights %w alpha = 0.6 gamma = 3.0 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<f32>
  %cs = graph.pointwise_loss cosine_similarity %p, %t : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<f32>
  %cg = graph.pointwise_loss_grad categorical_hinge %p, %t : tensor<8x3xf32>
  %s = graph.overlap_sums %p, %t weights %w : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8xf32> -> tensor<5xf32>
  %d = graph.overlap_loss dice %s : tensor<5xf32> -> tensor<f32>
  %tv = graph.overlap_loss tversky %s alpha = 0.25 beta = 0.75 : tensor<5xf32> -> tensor<f32>
  %g = graph.overlap_loss_grad tversky %t, %s weights %w alpha = 0.25 beta = 0.75 {replicas = 2} : tensor<8x3xf32>, tensor<5xf32>, tensor<8xf32> -> tensor<8x3xf32>
  %ds = graph.overlap_loss dice %s sum_reduction : tensor<5xf32> -> tensor<f32>
  %gs = graph.overlap_loss_grad dice %t, %s weights %w sum_reduction : tensor<8x3xf32>, tensor<5xf32>, tensor<8xf32> -> tensor<8x3xf32>
  %pg = graph.pointwise_loss_grad huber %p, %t weights %w : tensor<8x3xf32>, tensor<8xf32>
  graph.output %bf, %cf, %cs, %cg, %d, %tv, %g, %ds, %gs, %pg : tensor<f32>, tensor<f32>, tensor<f32>, tensor<8x3xf32>, tensor<f32>, tensor<f32>, tensor<8x3xf32>, tensor<f32>, tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// sparse_categorical_crossentropy with i32 and i64 class indices.
// CHECK-LABEL: graph.model @sparse_categorical_crossentropy {
// CHECK-NEXT: %[[P:.*]] = graph.input "p" : tensor<8x10xf32>
// CHECK-NEXT: %[[L:.*]] = graph.input "l" : tensor<8xi32>
// CHECK-NEXT: %[[L64:.*]] = graph.input "l64" : tensor<8xi64>
// CHECK-NEXT: %[[PROBS:.*]] = graph.sparse_categorical_crossentropy %[[P]], %[[L]] : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
// CHECK-NEXT: %[[LOGITS:.*]] = graph.sparse_categorical_crossentropy %[[P]], %[[L64]] from_logits : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
// CHECK-NEXT: graph.output %[[PROBS]], %[[LOGITS]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: }
graph.model @sparse_categorical_crossentropy {
  %p = graph.input "p" : tensor<8x10xf32>
  %l = graph.input "l" : tensor<8xi32>
  %l64 = graph.input "l64" : tensor<8xi64>
  %probs = graph.sparse_categorical_crossentropy %p, %l : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
  %logits = graph.sparse_categorical_crossentropy %p, %l64 from_logits : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  graph.output %probs, %logits : tensor<f32>, tensor<f32>
}

// -----

// accuracy against one-hot labels and against class indices.
// CHECK-LABEL: graph.model @accuracy {
// CHECK-NEXT: %[[P:.*]] = graph.input "p" : tensor<8x10xf32>
// CHECK-NEXT: %[[ONEHOT:.*]] = graph.input "onehot" : tensor<8x10xf32>
// CHECK-NEXT: %[[SPARSE:.*]] = graph.input "sparse" : tensor<8xi32>
// CHECK-NEXT: %[[A:.*]] = graph.accuracy %[[P]], %[[ONEHOT]] : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
// CHECK-NEXT: %[[B:.*]] = graph.accuracy %[[P]], %[[SPARSE]] : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
// CHECK-NEXT: graph.output %[[A]], %[[B]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: }
graph.model @accuracy {
  %p = graph.input "p" : tensor<8x10xf32>
  %onehot = graph.input "onehot" : tensor<8x10xf32>
  %sparse = graph.input "sparse" : tensor<8xi32>
  %a = graph.accuracy %p, %onehot : tensor<8x10xf32>, tensor<8x10xf32> -> tensor<f32>
  %b = graph.accuracy %p, %sparse : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
  graph.output %a, %b : tensor<f32>, tensor<f32>
}

// -----

// sgd prints all of its parameters; metrics is a list of names.
// CHECK-LABEL: graph.model @cnn {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<256x10xf32>
// CHECK-NEXT: graph.output %[[X]] : tensor<256x10xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @cnn losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 256
graph.model @cnn {
  %x = graph.input "x" : tensor<256x10xf32>
  graph.output %x : tensor<256x10xf32>
}
graph.training @cnn losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 256

// -----

// Optimizer parameters parse in any order and print in declaration order.
// CHECK-LABEL: graph.model @sgd_nesterov {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<64x10xf32>
// CHECK-NEXT: graph.output %[[X]] : tensor<64x10xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @sgd_nesterov losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.1, momentum = 0.9, nesterov = true> global_batch_size = 64
graph.model @sgd_nesterov {
  %x = graph.input "x" : tensor<64x10xf32>
  graph.output %x : tensor<64x10xf32>
}
graph.training @sgd_nesterov losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<nesterov = true, momentum = 0.9, learning_rate = 0.1> global_batch_size = 64

// -----

// adam, sparse loss from logits.
// CHECK-LABEL: graph.model @adam {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<32x10xf32>
// CHECK-NEXT: %[[L:.*]] = graph.input "labels" : tensor<32xi32>
// CHECK-NEXT: graph.output %[[X]] : tensor<32x10xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @adam losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, from_logits = true, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 32
graph.model @adam {
  %x = graph.input "x" : tensor<32x10xf32>
  %l = graph.input "labels" : tensor<32xi32>
  graph.output %x : tensor<32x10xf32>
}
graph.training @adam losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, from_logits = true, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 32

// -----

// adam with amsgrad; 3.0e-4 prints as 3.0e-04.
// CHECK-LABEL: graph.model @adam_amsgrad {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<32x10xf32>
// CHECK-NEXT: graph.output %[[X]] : tensor<32x10xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @adam_amsgrad losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = categorical_accuracy, name = "categorical_accuracy">]>] optimizer = #graph.adam<learning_rate = 3.0e-04, beta_1 = 0.0, beta_2 = 0.5, epsilon = 1.0, amsgrad = true> global_batch_size = 32
graph.model @adam_amsgrad {
  %x = graph.input "x" : tensor<32x10xf32>
  graph.output %x : tensor<32x10xf32>
}
graph.training @adam_amsgrad losses = [#graph.output_loss<kind = categorical_crossentropy, from_logits = true, metrics = [#graph.metric<kind = accuracy, name = "accuracy">, #graph.metric<kind = categorical_accuracy, name = "categorical_accuracy">]>] optimizer = #graph.adam<learning_rate = 3.0e-4, beta_1 = 0.0, beta_2 = 0.5, epsilon = 1.0, amsgrad = true> global_batch_size = 32

// -----

// rmsprop, plain.
// CHECK-LABEL: graph.model @rmsprop {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<16x4xf32>
// CHECK-NEXT: graph.output %[[X]] : tensor<16x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @rmsprop losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = 1.0e-07, centered = false> global_batch_size = 16
graph.model @rmsprop {
  %x = graph.input "x" : tensor<16x4xf32>
  graph.output %x : tensor<16x4xf32>
}
graph.training @rmsprop losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.rmsprop<learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = 1.0e-07, centered = false> global_batch_size = 16

// -----

// rmsprop, centered with momentum; extra attributes follow the op.
// CHECK-LABEL: graph.model @rmsprop_centered {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<16x4xf32>
// CHECK-NEXT: graph.output %[[X]] : tensor<16x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.training @rmsprop_centered losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.rmsprop<learning_rate = 0.01, rho = 0.95, momentum = 0.5, epsilon = 1.0e-06, centered = true> global_batch_size = 16 {note = "extra"}
graph.model @rmsprop_centered {
  %x = graph.input "x" : tensor<16x4xf32>
  graph.output %x : tensor<16x4xf32>
}
graph.training @rmsprop_centered losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.rmsprop<learning_rate = 0.01, rho = 0.95, momentum = 0.5, epsilon = 1.0e-06, centered = true> global_batch_size = 16 {note = "extra"}

// -----

// A model with attributes, several outputs of several element types, and
// reads at module level.
// CHECK-LABEL: graph.variable @shared : tensor<4xf32> = #graph.init<ones>
// CHECK-NEXT: %[[R:.*]] = graph.read_variable @shared : tensor<4xf32>
// CHECK-NEXT: graph.model @two_outputs attributes {keras_name = "functional"} {
// CHECK-NEXT: %[[X:.*]] = graph.input "x" : tensor<4x3xf32>
// CHECK-NEXT: %[[L:.*]] = graph.input "labels" : tensor<4xi64>
// CHECK-NEXT: %[[W:.*]] = graph.read_variable @shared : tensor<4xf32>
// CHECK-NEXT: graph.output %[[X]], %[[L]], %[[W]] : tensor<4x3xf32>, tensor<4xi64>, tensor<4xf32>
// CHECK-NEXT: }
graph.variable @shared : tensor<4xf32> = #graph.init<ones>
%r = graph.read_variable @shared : tensor<4xf32>
graph.model @two_outputs attributes {keras_name = "functional"} {
  %x = graph.input "x" : tensor<4x3xf32>
  %l = graph.input "labels" : tensor<4xi64>
  %w = graph.read_variable @shared : tensor<4xf32>
  graph.output %x, %l, %w : tensor<4x3xf32>, tensor<4xi64>, tensor<4xf32>
}

// -----

// graph-fuse's pool forms: a conv with its max pool (pooled output and i32
// argmax), the pool's gradient from the argmax, and the pool gradients that
// also sum their result per channel (input_grad_sum).
// CHECK-LABEL: graph.model @pool_fusions {
// CHECK: %[[Y:.*]], %[[A:.*]] = graph.fused_conv2d_pool %{{.*}}, %{{.*}} bias %{{.*}} strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x10x10x3xf32>, tensor<3x3x3x8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xi32>)
// CHECK: %{{.*}}, %{{.*}} = graph.max_pool2d_argmax_grad %[[A]], %[[Y]], %{{.*}} pool_size = [2, 2] strides = [2, 2] padding = valid {relu_grad} : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>)
// CHECK: graph.max_pool2d_argmax_grad %[[A]], %[[Y]], %{{.*}} pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x8x8x8xf32>
// CHECK: graph.max_pool2d_grad %{{.*}}, %{{.*}}, %{{.*}} pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x8x8x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>)
graph.model @pool_fusions {
  %x = graph.input "x" : tensor<2x10x10x3xf32>
  %k = graph.input "k" : tensor<3x3x3x8xf32>
  %b = graph.input "b" : tensor<8xf32>
  %dy = graph.input "dy" : tensor<2x4x4x8xf32>
  %c = graph.input "c" : tensor<2x8x8x8xf32>
  %y, %a = graph.fused_conv2d_pool %x, %k bias %b strides = [1, 1] padding = valid dilations = [1, 1] activation = relu pool_size = [2, 2] pool_strides = [2, 2] pool_padding = valid : (tensor<2x10x10x3xf32>, tensor<3x3x3x8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xi32>)
  %dx, %db = graph.max_pool2d_argmax_grad %a, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid {relu_grad} : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>)
  %dx2 = graph.max_pool2d_argmax_grad %a, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x8x8x8xf32>
  %dx3, %db3 = graph.max_pool2d_grad %c, %y, %dy pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<2x8x8x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>)
  graph.output %dx, %db, %dx2, %dx3, %db3 : tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>, tensor<8xf32>
}
