// RUN: graph-opt %s | graph-opt | FileCheck %s

// Every exec op, printed and parsed back.

graph.variable @w : tensor<3x2xf32> = #graph.init<glorot_uniform>

// CHECK-LABEL: exec.program @train kind = train replicas = 2 {
// CHECK-NEXT:    %[[X0:.*]] = exec.input "input_layer" replica = 0 device = 0 : memref<2x3xf32>
// CHECK-NEXT:    %[[L0:.*]] = exec.input "labels" replica = 0 device = 0 : memref<2xi32>
// CHECK-NEXT:    %[[W0:.*]] = exec.variable @w device = 0 : memref<3x2xf32>
// CHECK-NEXT:    %[[W1:.*]] = exec.variable @w device = 1 : memref<3x2xf32>
// CHECK-NEXT:    %[[Y0:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    %[[B0:.*]] = exec.alloc device = 0 : memref<6xf32>
// CHECK-NEXT:    %[[B1:.*]] = exec.alloc device = 1 : memref<6xf32>
// CHECK-NEXT:    %[[G0:.*]] = exec.view %[[B0]][0] : memref<6xf32> -> memref<3x2xf32>
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "fused_dense" on <compute, 0> ins(%[[X0]], %[[W0]] : memref<2x3xf32>, memref<3x2xf32>) outs(%[[Y0]] : memref<2x2xf32>) config {activation = "relu", strides = [1, 1]}
// CHECK-NEXT:    exec.launch "zero" on <compute, 1> ins() outs(%[[B1]] : memref<6xf32>) config {}
// CHECK-NEXT:    exec.launch "dense_grad_kernel" on <compute, 0> ins(%[[X0]], %[[Y0]] : memref<2x3xf32>, memref<2x2xf32>) outs(%[[G0]] : memref<3x2xf32>) config {}
// CHECK-NEXT:    %[[E0:.*]] = exec.record on <compute, 0>
// CHECK-NEXT:    exec.wait %[[E0]] on <comm, 0>
// CHECK-NEXT:    %[[E1:.*]] = exec.record on <compute, 1>
// CHECK-NEXT:    exec.wait %[[E1]] on <comm, 1>
// CHECK-NEXT:    exec.timestamp "allreduce_begin" on <comm, 0>
// CHECK-NEXT:    exec.all_reduce "mean" %[[B0]], %[[B1]] bucket = 0 : memref<6xf32>, memref<6xf32>
// CHECK-NEXT:    exec.all_reduce "sum" %[[B0]], %[[B1]] bucket = 1 : memref<6xf32>, memref<6xf32>
// CHECK-NEXT:    %[[F0:.*]] = exec.record on <comm, 0>
// CHECK-NEXT:    exec.wait %[[F0]] on <compute, 0>
// CHECK-NEXT:    exec.copy %[[G0]] to %[[W0]] on <compute, 0> : memref<3x2xf32>
// CHECK-NEXT:    exec.copy %[[W0]] to %[[G0]] on <copy, 0> : memref<3x2xf32>
// CHECK-NEXT:    %[[LOSS:.*]] = exec.alloc device = 0 : memref<f32>
// CHECK-NEXT:    exec.launch "sparse_categorical_crossentropy" on <copy, 0> ins(%[[Y0]], %[[L0]] : memref<2x2xf32>, memref<2xi32>) outs(%[[LOSS]] : memref<f32>) config {}
// CHECK-NEXT:    exec.output "loss" replica = 0 %[[LOSS]] : memref<f32>
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 0>
// CHECK-NEXT:  }
exec.program @train kind = train replicas = 2 {
  %x0 = exec.input "input_layer" replica = 0 device = 0 : memref<2x3xf32>
  %l0 = exec.input "labels" replica = 0 device = 0 : memref<2xi32>
  %w0 = exec.variable @w device = 0 : memref<3x2xf32>
  %w1 = exec.variable @w device = 1 : memref<3x2xf32>
  %y0 = exec.alloc device = 0 : memref<2x2xf32>
  %b0 = exec.alloc device = 0 : memref<6xf32>
  %b1 = exec.alloc device = 1 : memref<6xf32>
  %g0 = exec.view %b0[0] : memref<6xf32> -> memref<3x2xf32>
  exec.timestamp "step_begin" on <compute, 0>
  exec.launch "fused_dense" on <compute, 0> ins(%x0, %w0 : memref<2x3xf32>, memref<3x2xf32>) outs(%y0 : memref<2x2xf32>) config {activation = "relu", strides = [1, 1]}
  exec.launch "zero" on <compute, 1> ins() outs(%b1 : memref<6xf32>) config {}
  exec.launch "dense_grad_kernel" on <compute, 0> ins(%x0, %y0 : memref<2x3xf32>, memref<2x2xf32>) outs(%g0 : memref<3x2xf32>) config {}
  %e0 = exec.record on <compute, 0>
  exec.wait %e0 on <comm, 0>
  %e1 = exec.record on <compute, 1>
  exec.wait %e1 on <comm, 1>
  exec.timestamp "allreduce_begin" on <comm, 0>
  exec.all_reduce "mean" %b0, %b1 bucket = 0 : memref<6xf32>, memref<6xf32>
  exec.all_reduce "sum" %b0, %b1 bucket = 1 : memref<6xf32>, memref<6xf32>
  %f0 = exec.record on <comm, 0>
  exec.wait %f0 on <compute, 0>
  exec.copy %g0 to %w0 on <compute, 0> : memref<3x2xf32>
  exec.copy %w0 to %g0 on <copy, 0> : memref<3x2xf32>
  %loss = exec.alloc device = 0 : memref<f32>
  exec.launch "sparse_categorical_crossentropy" on <copy, 0> ins(%y0, %l0 : memref<2x2xf32>, memref<2xi32>) outs(%loss : memref<f32>) config {}
  exec.output "loss" replica = 0 %loss : memref<f32>
  exec.timestamp "step_end" on <compute, 0>
}

// A planned program: offsets and one arena per device.

// CHECK-LABEL: exec.program @eval kind = eval replicas = 2 attributes {arena_bytes = array<i64: 512, 256>} {
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 1 offset = 0 : memref<4xi32>
// CHECK-NEXT:  }
exec.program @eval kind = eval replicas = 2 attributes {arena_bytes = array<i64: 512, 256>} {
  %a = exec.alloc device = 0 offset = 0 : memref<64xf32>
  %b = exec.alloc device = 0 offset = 256 : memref<64xf32>
  %c = exec.alloc device = 1 offset = 0 : memref<4xi32>
}
