// RUN: graph-opt %s --split-input-file --exec-insert-timestamps | FileCheck %s
// Idempotence: a second run adds nothing.
// RUN: graph-opt %s --split-input-file --exec-insert-timestamps --exec-insert-timestamps | FileCheck %s

// Two replicas with one bucket: every device gets its compute marks, and its
// comm stream brackets the all-reduces. backward_begin goes before the first
// *_grad kernel (the loss kernel counts as forward), backward_end right before
// the first wait for a reduction, update_begin right before the optimizer
// (after that wait), allreduce_begin after the comm stream's wait for compute.

// CHECK-LABEL: exec.program @train kind = train replicas = 2 {
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 1>
// CHECK-NEXT:    exec.input "x" replica = 0 device = 0
// CHECK-NEXT:    exec.variable @w device = 0
// CHECK-NEXT:    exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.timestamp "forward_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "fused_dense" on <compute, 0>
// CHECK-NEXT:    exec.alloc device = 0 : memref<f32>
// CHECK-NEXT:    exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "softmax_cross_entropy" on <compute, 0>
// CHECK-NEXT:    exec.alloc device = 0 : memref<6xf32>
// CHECK-NEXT:    exec.view
// CHECK-NEXT:    exec.timestamp "backward_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "dense_grad_kernel" on <compute, 0>
// CHECK:         exec.input "x" replica = 1 device = 1
// CHECK-NEXT:    exec.variable @w device = 1
// CHECK-NEXT:    exec.alloc device = 1 : memref<2x2xf32>
// CHECK-NEXT:    exec.timestamp "forward_begin" on <compute, 1>
// CHECK-NEXT:    exec.launch "fused_dense" on <compute, 1>
// CHECK:         exec.timestamp "backward_begin" on <compute, 1>
// CHECK-NEXT:    exec.launch "dense_grad_kernel" on <compute, 1>
// CHECK-NEXT:    exec.record on <compute, 1>
// CHECK-NEXT:    exec.wait %{{.*}} on <comm, 1>
// CHECK-NEXT:    exec.timestamp "allreduce_begin" on <comm, 0>
// CHECK-NEXT:    exec.timestamp "allreduce_begin" on <comm, 1>
// CHECK-NEXT:    exec.all_reduce "mean"
// CHECK-NEXT:    exec.timestamp "allreduce_end" on <comm, 0>
// CHECK-NEXT:    exec.timestamp "allreduce_end" on <comm, 1>
// CHECK-NEXT:    exec.record on <comm, 0>
// CHECK-NEXT:    exec.record on <comm, 1>
// CHECK:         exec.timestamp "backward_end" on <compute, 0>
// CHECK-NEXT:    exec.wait %{{.*}} on <compute, 0>
// CHECK-NEXT:    exec.timestamp "update_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "backward_end" on <compute, 1>
// CHECK-NEXT:    exec.wait %{{.*}} on <compute, 1>
// CHECK-NEXT:    exec.timestamp "update_begin" on <compute, 1>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 1>
// CHECK-NEXT:    exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "loss" replica = 1
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 1>
// CHECK-NEXT:  }
exec.program @train kind = train replicas = 2 {
  %x0 = exec.input "x" replica = 0 device = 0 : memref<2x2xf32>
  %w0 = exec.variable @w device = 0 : memref<2x2xf32>
  %h0 = exec.alloc device = 0 : memref<2x2xf32>
  exec.launch "fused_dense" on <compute, 0> ins(%x0, %w0 : memref<2x2xf32>, memref<2x2xf32>) outs(%h0 : memref<2x2xf32>) config {activation = "none"}
  %loss0 = exec.alloc device = 0 : memref<f32>
  %dz0 = exec.alloc device = 0 : memref<2x2xf32>
  exec.launch "softmax_cross_entropy" on <compute, 0> ins(%h0, %x0 : memref<2x2xf32>, memref<2x2xf32>) outs(%h0, %loss0, %dz0 : memref<2x2xf32>, memref<f32>, memref<2x2xf32>) config {}
  %bk0 = exec.alloc device = 0 : memref<6xf32>
  %dw0 = exec.view %bk0[0] : memref<6xf32> -> memref<2x2xf32>
  exec.launch "dense_grad_kernel" on <compute, 0> ins(%x0, %dz0 : memref<2x2xf32>, memref<2x2xf32>) outs(%dw0 : memref<2x2xf32>) config {}
  %e0 = exec.record on <compute, 0>
  exec.wait %e0 on <comm, 0>
  %x1 = exec.input "x" replica = 1 device = 1 : memref<2x2xf32>
  %w1 = exec.variable @w device = 1 : memref<2x2xf32>
  %h1 = exec.alloc device = 1 : memref<2x2xf32>
  exec.launch "fused_dense" on <compute, 1> ins(%x1, %w1 : memref<2x2xf32>, memref<2x2xf32>) outs(%h1 : memref<2x2xf32>) config {activation = "none"}
  %loss1 = exec.alloc device = 1 : memref<f32>
  %dz1 = exec.alloc device = 1 : memref<2x2xf32>
  exec.launch "softmax_cross_entropy" on <compute, 1> ins(%h1, %x1 : memref<2x2xf32>, memref<2x2xf32>) outs(%h1, %loss1, %dz1 : memref<2x2xf32>, memref<f32>, memref<2x2xf32>) config {}
  %bk1 = exec.alloc device = 1 : memref<6xf32>
  %dw1 = exec.view %bk1[0] : memref<6xf32> -> memref<2x2xf32>
  exec.launch "dense_grad_kernel" on <compute, 1> ins(%x1, %dz1 : memref<2x2xf32>, memref<2x2xf32>) outs(%dw1 : memref<2x2xf32>) config {}
  %e1 = exec.record on <compute, 1>
  exec.wait %e1 on <comm, 1>
  exec.all_reduce "mean" %bk0, %bk1 bucket = 0 : memref<6xf32>, memref<6xf32>
  %f0 = exec.record on <comm, 0>
  %f1 = exec.record on <comm, 1>
  %g0 = exec.view %bk0[0] : memref<6xf32> -> memref<2x2xf32>
  %g1 = exec.view %bk1[0] : memref<6xf32> -> memref<2x2xf32>
  exec.wait %f0 on <compute, 0>
  exec.launch "optimizer_update" on <compute, 0> ins(%w0, %g0 : memref<2x2xf32>, memref<2x2xf32>) outs(%w0 : memref<2x2xf32>) config {}
  exec.wait %f1 on <compute, 1>
  exec.launch "optimizer_update" on <compute, 1> ins(%w1, %g1 : memref<2x2xf32>, memref<2x2xf32>) outs(%w1 : memref<2x2xf32>) config {}
  exec.output "loss" replica = 0 %loss0 : memref<f32>
  exec.output "loss" replica = 1 %loss1 : memref<f32>
}

// -----

// One replica: no all-reduce, so nothing on the comm stream. A gradient
// fused into an elementwise body starts backward too.

// CHECK-LABEL: exec.program @train kind = train replicas = 1 {
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 0>
// CHECK-NOT:     comm
// CHECK:         exec.timestamp "forward_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "relu" on <compute, 0>
// CHECK-NEXT:    exec.launch "sparse_categorical_crossentropy" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "backward_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "elementwise" on <compute, 0>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "backward_end" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "update_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 0>
// CHECK-NEXT:    exec.output "loss" replica = 0
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 0>
// CHECK-NEXT:  }
// CHECK-NOT:   allreduce
exec.program @train kind = train replicas = 1 {
  %x = exec.input "x" replica = 0 device = 0 : memref<2x2xf32>
  %l = exec.input "labels" replica = 0 device = 0 : memref<2xi32>
  %b = exec.variable @b device = 0 : memref<2xf32>
  %a = exec.alloc device = 0 : memref<2x2xf32>
  %loss = exec.alloc device = 0 : memref<f32>
  %d = exec.alloc device = 0 : memref<2x2xf32>
  %db = exec.alloc device = 0 : memref<2xf32>
  exec.launch "relu" on <compute, 0> ins(%x : memref<2x2xf32>) outs(%a : memref<2x2xf32>) config {}
  exec.launch "sparse_categorical_crossentropy" on <compute, 0> ins(%a, %l : memref<2x2xf32>, memref<2xi32>) outs(%loss : memref<f32>) config {}
  exec.launch "elementwise" on <compute, 0> ins(%a, %a : memref<2x2xf32>, memref<2x2xf32>) outs(%d : memref<2x2xf32>) config {body = "relu_grad(a0, a1) -> t0; yield t0"}
  exec.launch "bias_add_grad" on <compute, 0> ins(%d : memref<2x2xf32>) outs(%db : memref<2xf32>) config {}
  exec.launch "optimizer_update" on <compute, 0> ins(%b, %db : memref<2xf32>, memref<2xf32>) outs(%b : memref<2xf32>) config {}
  exec.output "loss" replica = 0 %loss : memref<f32>
}

// -----

// An evaluation program has no backward and no update.

// CHECK-LABEL: exec.program @eval kind = eval replicas = 2 {
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 1>
// CHECK-NEXT:    exec.input
// CHECK-NEXT:    exec.input
// CHECK-NEXT:    exec.alloc device = 0
// CHECK-NEXT:    exec.alloc device = 1
// CHECK-NEXT:    exec.timestamp "forward_begin" on <compute, 0>
// CHECK-NEXT:    exec.launch "relu" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "forward_begin" on <compute, 1>
// CHECK-NEXT:    exec.launch "relu" on <compute, 1>
// CHECK-NEXT:    exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "loss" replica = 1
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 0>
// CHECK-NEXT:    exec.timestamp "step_end" on <compute, 1>
// CHECK-NEXT:  }
// CHECK-NOT:   backward_begin
// CHECK-NOT:   allreduce
exec.program @eval kind = eval replicas = 2 {
  %x0 = exec.input "x" replica = 0 device = 0 : memref<f32>
  %x1 = exec.input "x" replica = 1 device = 1 : memref<f32>
  %y0 = exec.alloc device = 0 : memref<f32>
  %y1 = exec.alloc device = 1 : memref<f32>
  exec.launch "relu" on <compute, 0> ins(%x0 : memref<f32>) outs(%y0 : memref<f32>) config {}
  exec.launch "relu" on <compute, 1> ins(%x1 : memref<f32>) outs(%y1 : memref<f32>) config {}
  exec.output "loss" replica = 0 %y0 : memref<f32>
  exec.output "loss" replica = 1 %y1 : memref<f32>
}

// -----

// A program that already has timestamps is left as it is.

// CHECK-LABEL: exec.program @stamped kind = eval replicas = 1 {
// CHECK-NEXT:    exec.timestamp "step_begin" on <compute, 0>
// CHECK-NEXT:    exec.input
// CHECK-NEXT:    exec.alloc
// CHECK-NEXT:    exec.launch "relu" on <compute, 0>
// CHECK-NEXT:    exec.output "loss" replica = 0
// CHECK-NEXT:  }
exec.program @stamped kind = eval replicas = 1 {
  exec.timestamp "step_begin" on <compute, 0>
  %x = exec.input "x" replica = 0 device = 0 : memref<f32>
  %y = exec.alloc device = 0 : memref<f32>
  exec.launch "relu" on <compute, 0> ins(%x : memref<f32>) outs(%y : memref<f32>) config {}
  exec.output "loss" replica = 0 %y : memref<f32>
}
