// The replicated steps below list replica 1's graph.input ops under the same
// names as replica 0's, as dist-replicate emits them (docs/compiler-ir.md,
// section 3): an input name is unique per device.
// RUN: graph-opt %s --split-input-file --graph-lower-to-exec | FileCheck %s

// Two replicas, two buckets: bucket 0 holds dense_1's gradients, bucket 1
// dense's. The step models are erased; the variables, the forward model and
// the training configuration stay.

// CHECK-LABEL: graph.variable @"dense/kernel"
// CHECK:       graph.variable @"dense_1/bias/v"
// CHECK:       graph.model @m
// CHECK:       graph.training @m
// CHECK-NOT:   graph.model

// CHECK-LABEL: exec.program @train kind = train replicas = 2 {
// CHECK:         %[[X0:.*]] = exec.input "input_layer" replica = 0 device = 0 : memref<2x3xf32>
// CHECK:         %[[L0:.*]] = exec.input "labels" replica = 0 device = 0 : memref<2x2xf32>
// CHECK:         %[[K0:.*]] = exec.variable @"dense/kernel" device = 0 : memref<3x2xf32>
// CHECK:         %[[B0:.*]] = exec.variable @"dense/bias" device = 0 : memref<2xf32>
// CHECK:         %[[H0:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "fused_dense" on <compute, 0> ins(%[[X0]], %[[K0]], %[[B0]] : memref<2x3xf32>, memref<3x2xf32>, memref<2xf32>) outs(%[[H0]] : memref<2x2xf32>) config {activation = "relu"}
// CHECK:         %[[K1:.*]] = exec.variable @"dense_1/kernel" device = 0
// CHECK:         %[[B1:.*]] = exec.variable @"dense_1/bias" device = 0
// CHECK:         exec.launch "fused_dense" on <compute, 0> {{.*}} config {activation = "none"}
// CHECK:         %[[LOSS0:.*]] = exec.alloc device = 0 : memref<f32>
// CHECK:         %[[DZ0:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "softmax_cross_entropy" on <compute, 0> ins({{.*}}, %[[L0]] : {{.*}}) outs({{.*}}, %[[LOSS0]], %[[DZ0]] : memref<2x2xf32>, memref<f32>, memref<2x2xf32>) config {}
// CHECK:         %[[ACC0:.*]] = exec.alloc device = 0 : memref<f32>
// CHECK-NEXT:    exec.launch "accuracy" on <compute, 0>
// Replica 0's dense_1 gradients are written in place into bucket 0.
// CHECK:         %[[BK00:.*]] = exec.alloc device = 0 : memref<6xf32>
// CHECK-NEXT:    %[[DB1:.*]] = exec.view %[[BK00]][0] : memref<6xf32> -> memref<2xf32>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 0> ins(%[[DZ0]] : memref<2x2xf32>) outs(%[[DB1]] : memref<2xf32>)
// CHECK-NEXT:    %[[DK1:.*]] = exec.view %[[BK00]][2] : memref<6xf32> -> memref<2x2xf32>
// CHECK-NEXT:    exec.launch "dense_grad_kernel" on <compute, 0> ins(%[[H0]], %[[DZ0]] : {{.*}}) outs(%[[DK1]] : memref<2x2xf32>)
// Compute 0 marks bucket 0 filled (comm 0 waits for that mark at the
// all-reduce, not here: a wait here would queue on comm 0 ahead of bucket 0's
// reduction every later bucket's wait)...
// CHECK-NEXT:    %[[E00:.*]] = exec.record on <compute, 0>
// CHECK-NOT:     on <comm
// ...while compute 0 goes on with dense's backward, into bucket 1.
// CHECK-NEXT:    %[[DH0:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "dense_grad_input" on <compute, 0> ins(%[[DZ0]], %[[K1]] : {{.*}}) outs(%[[DH0]] : memref<2x2xf32>)
// CHECK:         exec.launch "relu_grad" on <compute, 0>
// CHECK:         %[[BK10:.*]] = exec.alloc device = 0 : memref<8xf32>
// CHECK-NEXT:    %[[DB0:.*]] = exec.view %[[BK10]][0] : memref<8xf32> -> memref<2xf32>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 0> {{.*}} outs(%[[DB0]] : memref<2xf32>)
// CHECK-NEXT:    %[[DK0:.*]] = exec.view %[[BK10]][2] : memref<8xf32> -> memref<3x2xf32>
// CHECK-NEXT:    exec.launch "dense_grad_kernel" on <compute, 0> ins(%[[X0]], {{.*}}) outs(%[[DK0]] : memref<3x2xf32>)
// CHECK-NEXT:    %[[E10:.*]] = exec.record on <compute, 0>
// CHECK-NOT:     on <comm
// Replica 1.
// CHECK:         exec.input "input_layer" replica = 1 device = 1 : memref<2x3xf32>
// CHECK:         %[[K1_1:.*]] = exec.variable @"dense_1/kernel" device = 1
// CHECK:         exec.alloc device = 1 : memref<f32>
// CHECK-NEXT:    %[[DZ1:.*]] = exec.alloc device = 1 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "softmax_cross_entropy" on <compute, 1>
// CHECK:         %[[BK01:.*]] = exec.alloc device = 1 : memref<6xf32>
// CHECK:         exec.launch "dense_grad_kernel" on <compute, 1>
// CHECK-NEXT:    %[[E01:.*]] = exec.record on <compute, 1>
// Each comm stream waits for its replica's bucket 0 right before reducing it.
// CHECK-NEXT:    exec.wait %[[E00]] on <comm, 0>
// CHECK-NEXT:    exec.wait %[[E01]] on <comm, 1>
// CHECK-NEXT:    exec.all_reduce "mean" %[[BK00]], %[[BK01]] bucket = 0 : memref<6xf32>, memref<6xf32>
// CHECK-NEXT:    %[[F00:.*]] = exec.record on <comm, 0>
// CHECK-NEXT:    %[[F01:.*]] = exec.record on <comm, 1>
// The unpacked gradients are views of the bucket, no copy.
// CHECK-NEXT:    %[[G00:.*]] = exec.view %[[BK00]][0] : memref<6xf32> -> memref<2xf32>
// CHECK-NEXT:    %[[G01:.*]] = exec.view %[[BK00]][2] : memref<6xf32> -> memref<2x2xf32>
// CHECK-NEXT:    %[[G10:.*]] = exec.view %[[BK01]][0] : memref<6xf32> -> memref<2xf32>
// CHECK-NEXT:    %[[G11:.*]] = exec.view %[[BK01]][2] : memref<6xf32> -> memref<2x2xf32>
// Bucket 0 is reduced while compute 1 runs dense's backward: no wait yet.
// CHECK-NOT:     exec.wait
// CHECK:         exec.launch "dense_grad_input" on <compute, 1> ins(%[[DZ1]], %[[K1_1]] : {{.*}})
// CHECK-NEXT:    %{{.*}} = exec.alloc device = 1 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "relu_grad" on <compute, 1>
// CHECK:         %[[BK11:.*]] = exec.alloc device = 1 : memref<8xf32>
// CHECK:         exec.launch "dense_grad_kernel" on <compute, 1>
// CHECK-NEXT:    %[[E11:.*]] = exec.record on <compute, 1>
// CHECK-NEXT:    exec.wait %[[E10]] on <comm, 0>
// CHECK-NEXT:    exec.wait %[[E11]] on <comm, 1>
// CHECK-NEXT:    exec.all_reduce "mean" %[[BK10]], %[[BK11]] bucket = 1 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT:    %[[F10:.*]] = exec.record on <comm, 0>
// CHECK-NEXT:    %[[F11:.*]] = exec.record on <comm, 1>
// CHECK-NEXT:    %[[H00:.*]] = exec.view %[[BK10]][0] : memref<8xf32> -> memref<2xf32>
// CHECK-NEXT:    %[[H01:.*]] = exec.view %[[BK10]][2] : memref<8xf32> -> memref<3x2xf32>
// CHECK-NOT:     exec.wait
// The optimizer of replica 0 waits for both reductions right before it runs,
// and writes the new values into the variables' own buffers.
// CHECK:         %[[M_B1:.*]] = exec.variable @"dense_1/bias/m" device = 0 : memref<2xf32>
// CHECK-NEXT:    %[[V_B1:.*]] = exec.variable @"dense_1/bias/v" device = 0 : memref<2xf32>
// CHECK-NEXT:    %[[M_K1:.*]] = exec.variable @"dense_1/kernel/m" device = 0 : memref<2x2xf32>
// CHECK-NEXT:    %[[V_K1:.*]] = exec.variable @"dense_1/kernel/v" device = 0 : memref<2x2xf32>
// CHECK-NEXT:    %[[M_B0:.*]] = exec.variable @"dense/bias/m" device = 0 : memref<2xf32>
// CHECK-NEXT:    %[[V_B0:.*]] = exec.variable @"dense/bias/v" device = 0 : memref<2xf32>
// CHECK-NEXT:    %[[M_K0:.*]] = exec.variable @"dense/kernel/m" device = 0 : memref<3x2xf32>
// CHECK-NEXT:    %[[V_K0:.*]] = exec.variable @"dense/kernel/v" device = 0 : memref<3x2xf32>
// CHECK-NEXT:    exec.wait %[[F00]] on <compute, 0>
// CHECK-NEXT:    exec.wait %[[F10]] on <compute, 0>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 0>
// CHECK-SAME:      ins(%[[B1]], %[[K1]], %[[B0]], %[[K0]], %[[G00]], %[[G01]], %[[H00]], %[[H01]], %[[M_B1]], %[[V_B1]], %[[M_K1]], %[[V_K1]], %[[M_B0]], %[[V_B0]], %[[M_K0]], %[[V_K0]] :
// CHECK-SAME:      outs(%[[B1]], %[[K1]], %[[B0]], %[[K0]], %[[M_B1]], %[[V_B1]], %[[M_K1]], %[[V_K1]], %[[M_B0]], %[[V_B0]], %[[M_K0]], %[[V_K0]] :
// CHECK-SAME:      config {optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false>}
// CHECK:         exec.wait %[[F01]] on <compute, 1>
// CHECK-NEXT:    exec.wait %[[F11]] on <compute, 1>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 1>
// No copies: every update is in place.
// CHECK-NOT:     exec.copy
// CHECK:         exec.output "loss" replica = 0 %[[LOSS0]] : memref<f32>
// CHECK-NEXT:    exec.output "accuracy" replica = 0 %[[ACC0]] : memref<f32>
// CHECK-NEXT:    exec.output "loss" replica = 1
// CHECK-NEXT:    exec.output "accuracy" replica = 1
// CHECK-NEXT:  }

// The evaluation program: forward, loss and metrics only.
// CHECK-LABEL: exec.program @eval kind = eval replicas = 2 {
// CHECK-NOT:     comm
// CHECK-NOT:     optimizer_update
// CHECK:         exec.launch "softmax_cross_entropy" on <compute, 0>
// CHECK:         exec.launch "accuracy" on <compute, 1>
// CHECK:         exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "accuracy" replica = 0
// CHECK-NEXT:    exec.output "loss" replica = 1
// CHECK-NEXT:    exec.output "accuracy" replica = 1
// CHECK-NEXT:  }

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
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %y : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4
graph.model @train_step attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %l0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %h0 = graph.fused_dense %x0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %z0 = graph.fused_dense %h0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %p0, %loss0, %dz0 = graph.softmax_cross_entropy %z0, %l0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc0 = graph.accuracy %p0, %l0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %db1_0 = graph.bias_add_grad %dz0 {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk1_0 = graph.dense_grad_kernel %h0, %dz0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %bk0_0 = dist.pack %db1_0, %dk1_0 {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<2x2xf32> -> tensor<6xf32>
  %dh0 = graph.dense_grad_input %dz0, %k1_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dr0 = graph.relu_grad %dh0, %h0 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %db0_0 = graph.bias_add_grad %dr0 {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk0_0 = graph.dense_grad_kernel %x0, %dr0 {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %bk1_0 = dist.pack %db0_0, %dk0_0 {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<3x2xf32> -> tensor<8xf32>
  %x1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
  %l1 = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %k0_1 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %b0_1 = graph.read_variable @"dense/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %h1 = graph.fused_dense %x1, %k0_1 bias %b0_1 activation = relu {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_1 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %b1_1 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %z1 = graph.fused_dense %h1, %k1_1 bias %b1_1 activation = none {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %p1, %loss1, %dz1 = graph.softmax_cross_entropy %z1, %l1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc1 = graph.accuracy %p1, %l1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %db1_1 = graph.bias_add_grad %dz1 {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk1_1 = graph.dense_grad_kernel %h1, %dz1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %bk0_1 = dist.pack %db1_1, %dk1_1 {dist.device = #dist.device<1>} : tensor<2xf32>, tensor<2x2xf32> -> tensor<6xf32>
  %r0_0, %r0_1 = dist.all_reduce mean %bk0_0, %bk0_1 {bucket = 0 : i64} : tensor<6xf32>, tensor<6xf32>
  %g0_0:2 = dist.unpack %r0_0 {dist.device = #dist.device<0>} : tensor<6xf32> -> tensor<2xf32>, tensor<2x2xf32>
  %g0_1:2 = dist.unpack %r0_1 {dist.device = #dist.device<1>} : tensor<6xf32> -> tensor<2xf32>, tensor<2x2xf32>
  %dh1 = graph.dense_grad_input %dz1, %k1_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dr1 = graph.relu_grad %dh1, %h1 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %db0_1 = graph.bias_add_grad %dr1 {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk0_1 = graph.dense_grad_kernel %x1, %dr1 {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %bk1_1 = dist.pack %db0_1, %dk0_1 {dist.device = #dist.device<1>} : tensor<2xf32>, tensor<3x2xf32> -> tensor<8xf32>
  %r1_0, %r1_1 = dist.all_reduce mean %bk1_0, %bk1_1 {bucket = 1 : i64} : tensor<8xf32>, tensor<8xf32>
  %g1_0:2 = dist.unpack %r1_0 {dist.device = #dist.device<0>} : tensor<8xf32> -> tensor<2xf32>, tensor<3x2xf32>
  %g1_1:2 = dist.unpack %r1_1 {dist.device = #dist.device<1>} : tensor<8xf32> -> tensor<2xf32>, tensor<3x2xf32>
  %m_dense_1_bias_0 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v_dense_1_bias_0 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %m_dense_1_kernel_0 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %v_dense_1_kernel_0 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %m_dense_bias_0 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v_dense_bias_0 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %m_dense_kernel_0 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %v_dense_kernel_0 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %np0:4, %ns0:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_0, %k1_0, %b0_0, %k0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%g0_0#0, %g0_0#1, %g1_0#0, %g1_0#1 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%m_dense_1_bias_0, %v_dense_1_bias_0, %m_dense_1_kernel_0, %v_dense_1_kernel_0, %m_dense_bias_0, %v_dense_bias_0, %m_dense_kernel_0, %v_dense_kernel_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %np0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %np0#1 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %np0#2 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %np0#3 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %ns0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %ns0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %ns0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %ns0#3 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %ns0#4 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %ns0#5 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %ns0#6 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %ns0#7 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %m_dense_1_bias_1 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v_dense_1_bias_1 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<1>} : tensor<2xf32>
  %m_dense_1_kernel_1 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %v_dense_1_kernel_1 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %m_dense_bias_1 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v_dense_bias_1 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<1>} : tensor<2xf32>
  %m_dense_kernel_1 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %v_dense_kernel_1 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %np1:4, %ns1:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_1, %k1_1, %b0_1, %k0_1 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%g0_1#0, %g0_1#1, %g1_1#0, %g1_1#1 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%m_dense_1_bias_1, %v_dense_1_bias_1, %m_dense_1_kernel_1, %v_dense_1_kernel_1, %m_dense_bias_1, %v_dense_bias_1, %m_dense_kernel_1, %v_dense_kernel_1 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<1>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %np1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %np1#1 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %np1#2 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %np1#3 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %ns1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %ns1#1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %ns1#2 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %ns1#3 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %ns1#4 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %ns1#5 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %ns1#6 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %ns1#7 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.output %loss0, %acc0, %loss1, %acc1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
graph.model @eval_step attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %l0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %h0 = graph.fused_dense %x0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %z0 = graph.fused_dense %h0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %p0, %loss0, %dz0 = graph.softmax_cross_entropy %z0, %l0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc0 = graph.accuracy %p0, %l0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %x1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
  %l1 = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %k0_1 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %b0_1 = graph.read_variable @"dense/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %h1 = graph.fused_dense %x1, %k0_1 bias %b0_1 activation = relu {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_1 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %b1_1 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %z1 = graph.fused_dense %h1, %k1_1 bias %b1_1 activation = none {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %p1, %loss1, %dz1 = graph.softmax_cross_entropy %z1, %l1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc1 = graph.accuracy %p1, %l1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  graph.output %loss0, %acc0, %loss1, %acc1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// One replica: no bucket, no all-reduce, nothing on a comm stream; the
// gradients are plain allocs the optimizer reads.

// CHECK-LABEL: exec.program @train kind = train replicas = 1 {
// CHECK-NOT:     comm
// CHECK-NOT:     exec.all_reduce
// CHECK-NOT:     exec.view
// CHECK-NOT:     exec.record
// CHECK:         %[[DB1:.*]] = exec.alloc device = 0 : memref<2xf32>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 0> ins(%{{.*}} : memref<4x2xf32>) outs(%[[DB1]] : memref<2xf32>)
// CHECK:         exec.launch "optimizer_update" on <compute, 0> ins({{.*}}, %[[DB1]], {{.*}})
// CHECK-NOT:     comm
// CHECK:         exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "accuracy" replica = 0
// CHECK-NEXT:  }
// CHECK-LABEL: exec.program @eval kind = eval replicas = 1 {
// CHECK-NOT:     comm
// CHECK:         exec.output "accuracy" replica = 0

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
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %y = graph.dense %x, %k : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  graph.output %y : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4
graph.model @train_step attributes {dist.replicas = 1 : i64} {
  %x0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<4x3xf32>
  %l0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<4x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %h0 = graph.fused_dense %x0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %z0 = graph.fused_dense %h0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %p0, %loss0, %dz0 = graph.softmax_cross_entropy %z0, %l0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc0 = graph.accuracy %p0, %l0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %db1_0 = graph.bias_add_grad %dz0 {dist.device = #dist.device<0>} : tensor<4x2xf32> -> tensor<2xf32>
  %dk1_0 = graph.dense_grad_kernel %h0, %dz0 {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %dh0 = graph.dense_grad_input %dz0, %k1_0 {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %dr0 = graph.relu_grad %dh0, %h0 {dist.device = #dist.device<0>} : tensor<4x2xf32>
  %db0_0 = graph.bias_add_grad %dr0 {dist.device = #dist.device<0>} : tensor<4x2xf32> -> tensor<2xf32>
  %dk0_0 = graph.dense_grad_kernel %x0, %dr0 {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %m_dense_1_bias_0 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v_dense_1_bias_0 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %m_dense_1_kernel_0 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %v_dense_1_kernel_0 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %m_dense_bias_0 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v_dense_bias_0 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %m_dense_kernel_0 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %v_dense_kernel_0 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %np0:4, %ns0:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_0, %k1_0, %b0_0, %k0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%db1_0, %dk1_0, %db0_0, %dk0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%m_dense_1_bias_0, %v_dense_1_bias_0, %m_dense_1_kernel_0, %v_dense_1_kernel_0, %m_dense_bias_0, %v_dense_bias_0, %m_dense_kernel_0, %v_dense_kernel_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %np0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %np0#1 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %np0#2 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %np0#3 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %ns0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %ns0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %ns0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %ns0#3 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %ns0#4 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %ns0#5 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %ns0#6 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %ns0#7 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.output %loss0, %acc0 : tensor<f32>, tensor<f32>
}
graph.model @eval_step attributes {dist.replicas = 1 : i64} {
  %x0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<4x3xf32>
  %l0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<4x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %h0 = graph.fused_dense %x0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %z0 = graph.fused_dense %h0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %p0, %loss0, %dz0 = graph.softmax_cross_entropy %z0, %l0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc0 = graph.accuracy %p0, %l0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  graph.output %loss0, %acc0 : tensor<f32>, tensor<f32>
}

// -----

// An evaluation step alone: enum attributes become their names, arrays stay
// arrays, integer labels give an integer buffer, flatten is a view of its
// operand (a reshape moves no data).

// CHECK-LABEL: exec.program @eval kind = eval replicas = 1 {
// CHECK-NEXT:    %[[X:.*]] = exec.input "image" replica = 0 device = 0 : memref<2x4x4x1xf32>
// CHECK-NEXT:    %[[L:.*]] = exec.input "labels" replica = 0 device = 0 : memref<2xi32>
// CHECK-NEXT:    %[[K:.*]] = exec.variable @"conv2d/kernel" device = 0 : memref<3x3x1x4xf32>
// CHECK-NEXT:    %[[B:.*]] = exec.variable @"conv2d/bias" device = 0 : memref<4xf32>
// CHECK-NEXT:    %[[C:.*]] = exec.alloc device = 0 : memref<2x4x4x4xf32>
// CHECK-NEXT:    exec.launch "fused_conv2d" on <compute, 0> ins(%[[X]], %[[K]], %[[B]] : memref<2x4x4x1xf32>, memref<3x3x1x4xf32>, memref<4xf32>) outs(%[[C]] : memref<2x4x4x4xf32>) config {activation = "relu", dilations = array<i64: 1, 1>, padding = "same", strides = array<i64: 1, 1>}
// CHECK-NEXT:    %[[P:.*]] = exec.alloc device = 0 : memref<2x2x2x4xf32>
// CHECK-NEXT:    exec.launch "max_pool2d" on <compute, 0> ins(%[[C]] : memref<2x4x4x4xf32>) outs(%[[P]] : memref<2x2x2x4xf32>) config {padding = "valid", pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}
// CHECK-NEXT:    %[[F:.*]] = exec.view %[[P]][0] : memref<2x2x2x4xf32> -> memref<2x16xf32>
// CHECK-NOT:     exec.launch "flatten"
// CHECK:         exec.launch "fused_dense" on <compute, 0> ins(%[[F]],
// CHECK:         exec.launch "softmax" on <compute, 0> {{.*}} config {axis = -1 : i64}
// CHECK:         exec.launch "sparse_categorical_crossentropy" on <compute, 0> ins(%{{.*}}, %[[L]] : memref<2x3xf32>, memref<2xi32>)
// CHECK:         exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "accuracy" replica = 0
// CHECK-NEXT:  }
// CHECK-NOT:   exec.program @train

graph.variable @"conv2d/kernel" : tensor<3x3x1x4xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/bias" : tensor<4xf32> = #graph.init<zeros>
graph.variable @"dense/kernel" : tensor<16x3xf32> = #graph.init<glorot_uniform>
graph.model @cnn {
  %x = graph.input "image" : tensor<2x4x4x1xf32>
  %f = graph.flatten %x : tensor<2x4x4x1xf32> -> tensor<2x16xf32>
  graph.output %f : tensor<2x16xf32>
}
graph.training @cnn losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2
graph.model @eval_step attributes {dist.replicas = 1 : i64} {
  %x = graph.input "image" {dist.device = #dist.device<0>} : tensor<2x4x4x1xf32>
  %l = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2xi32>
  %k = graph.read_variable @"conv2d/kernel" {dist.device = #dist.device<0>} : tensor<3x3x1x4xf32>
  %b = graph.read_variable @"conv2d/bias" {dist.device = #dist.device<0>} : tensor<4xf32>
  %c = graph.fused_conv2d %x, %k bias %b strides = [1, 1] padding = same dilations = [1, 1] activation = relu {dist.device = #dist.device<0>} : (tensor<2x4x4x1xf32>, tensor<3x3x1x4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %p = graph.max_pool2d %c pool_size = [2, 2] strides = [2, 2] padding = valid {dist.device = #dist.device<0>} : tensor<2x4x4x4xf32> -> tensor<2x2x2x4xf32>
  %f = graph.flatten %p {dist.device = #dist.device<0>} : tensor<2x2x2x4xf32> -> tensor<2x16xf32>
  %dk = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<16x3xf32>
  %z = graph.fused_dense %f, %dk activation = none {dist.device = #dist.device<0>} : (tensor<2x16xf32>, tensor<16x3xf32>) -> tensor<2x3xf32>
  %s = graph.softmax %z {axis = -1 : i64, dist.device = #dist.device<0>} : tensor<2x3xf32>
  %loss = graph.sparse_categorical_crossentropy %s, %l {dist.device = #dist.device<0>} : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
  %acc = graph.accuracy %s, %l {dist.device = #dist.device<0>} : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// batch_norm_train and batch_norm_grad take the row mask last, as their
// configs say (has_row_mask); batch_norm_train writes the new moving
// statistics straight into the variables; the elementwise body is encoded
// for the runtime; the optimizer updates params and slots in place.

// CHECK-LABEL: exec.program @train kind = train replicas = 1 {
// CHECK:         %[[X:.*]] = exec.input "input_layer" replica = 0 device = 0 : memref<4x3xf32>
// CHECK:         %[[W:.*]] = exec.input "metric_weight" replica = 0 device = 0 : memref<4xf32>
// CHECK:         %[[MM:.*]] = exec.variable @"bn/moving_mean" device = 0 : memref<3xf32>
// CHECK-NEXT:    %[[MV:.*]] = exec.variable @"bn/moving_variance" device = 0 : memref<3xf32>
// CHECK-NEXT:    %[[G:.*]] = exec.variable @"bn/gamma" device = 0 : memref<3xf32>
// CHECK-NEXT:    %[[Y:.*]] = exec.alloc device = 0 : memref<4x3xf32>
// CHECK-NEXT:    %[[BM:.*]] = exec.alloc device = 0 : memref<3xf32>
// CHECK-NEXT:    %[[BIS:.*]] = exec.alloc device = 0 : memref<3xf32>
// CHECK-NEXT:    exec.launch "batch_norm_train" on <compute, 0> ins(%[[X]], %[[MM]], %[[MV]], %[[G]], %[[W]] : {{.*}}) outs(%[[Y]], %[[BM]], %[[BIS]], %[[MM]], %[[MV]] : memref<4x3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) config {epsilon = 1.000000e-03 : f64, has_beta = 0 : i64, has_gamma = 1 : i64, has_row_mask = 1 : i64, momentum = {{.*}} : f64}
// CHECK-NEXT:    %[[E:.*]] = exec.alloc device = 0 : memref<4x3xf32>
// CHECK-NEXT:    exec.launch "elementwise" on <compute, 0> ins(%[[Y]], %[[X]] : memref<4x3xf32>, memref<4x3xf32>) outs(%[[E]] : memref<4x3xf32>) config {body = "add(a0, a1) -> t0; leaky_relu(t0) {alpha=0.2} -> t1; yield t1"}
// CHECK-NEXT:    %[[D:.*]] = exec.alloc device = 0 : memref<4x3xf32>
// CHECK-NEXT:    exec.launch "dropout" on <compute, 0> ins(%[[E]] : memref<4x3xf32>) outs(%[[D]] : memref<4x3xf32>) config {rate = 5.000000e-01 : f64, seed = 7 : i64}
// CHECK:         exec.launch "dropout_grad" on <compute, 0> {{.*}} config {rate = 5.000000e-01 : f64, seed = 7 : i64}
// CHECK:         exec.launch "batch_norm_grad" on <compute, 0> ins({{.*}}, %[[X]], %[[BM]], %[[BIS]], %[[G]], %[[W]] : {{.*}}) outs({{.*}}) config {has_gamma = 1 : i64, has_row_mask = 1 : i64}
// CHECK:         %[[KM:.*]] = exec.variable @"dense/kernel/momentum" device = 0 : memref<3x2xf32>
// CHECK-NEXT:    %[[GM:.*]] = exec.variable @"bn/gamma/momentum" device = 0 : memref<3xf32>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 0> ins(%[[K:.*]], %[[G]], %{{.*}}, %{{.*}}, %[[KM]], %[[GM]] : {{.*}}) outs(%[[K]], %[[G]], %[[KM]], %[[GM]] : memref<3x2xf32>, memref<3xf32>, memref<3x2xf32>, memref<3xf32>) config {optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false>}
// CHECK-NOT:     exec.copy
// CHECK:         exec.output "loss" replica = 0
// CHECK-NEXT:    exec.output "accuracy" replica = 0
// CHECK-NEXT:  }

graph.variable @"bn/gamma" : tensor<3xf32> = #graph.init<ones>
graph.variable @"bn/moving_mean" : tensor<3xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/moving_variance" : tensor<3xf32> = #graph.init<ones> {trainable = false}
graph.variable @"dense/kernel" : tensor<3x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel/momentum" : tensor<3x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"bn/gamma/momentum" : tensor<3xf32> = #graph.init<zeros> {trainable = false}
graph.model @m {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  graph.output %x : tensor<4x3xf32>
}
graph.training @m losses = [#graph.output_loss<kind = sparse_categorical_crossentropy, metrics = [#graph.metric<kind = accuracy, name = "accuracy">]>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> global_batch_size = 4
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %l = graph.input "labels" : tensor<4xi32>
  %w = graph.input "metric_weight" : tensor<4xf32>
  %mm = graph.read_variable @"bn/moving_mean" : tensor<3xf32>
  %mv = graph.read_variable @"bn/moving_variance" : tensor<3xf32>
  %g = graph.read_variable @"bn/gamma" : tensor<3xf32>
  %y, %bm, %bis, %nmm, %nmv = graph.batch_norm_train %x, %mm, %mv gamma %g row_mask %w {epsilon = 1.0e-03 : f64, momentum = 0.99 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %e = graph.elementwise %y, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %t = graph.add %a, %b : tensor<f32>
    %u = graph.leaky_relu %t {alpha = 0.2 : f64} : tensor<f32>
    graph.yield %u : tensor<f32>
  }
  %d = graph.dropout %e {rate = 0.5 : f64, seed = 7 : i64} : tensor<4x3xf32>
  %k = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %z = graph.fused_dense %d, %k activation = none : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %p, %loss, %dz = graph.softmax_cross_entropy %z, %l : tensor<4x2xf32>, tensor<4xi32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc = graph.accuracy %p, %l : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  %dk = graph.dense_grad_kernel %d, %dz : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %dd = graph.dense_grad_input %dz, %k : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %de = graph.dropout_grad %dd {rate = 0.5 : f64, seed = 7 : i64} : tensor<4x3xf32>
  %dx, %dg, %db = graph.batch_norm_grad %de, %x, %bm, %bis gamma %g row_mask %w : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %km = graph.read_variable @"dense/kernel/momentum" : tensor<3x2xf32>
  %gm = graph.read_variable @"bn/gamma/momentum" : tensor<3xf32>
  %nk, %ng, %nkm, %ngm = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> params(%k, %g : tensor<3x2xf32>, tensor<3xf32>) grads(%dk, %dg : tensor<3x2xf32>, tensor<3xf32>) slots(%km, %gm : tensor<3x2xf32>, tensor<3xf32>) -> (tensor<3x2xf32>, tensor<3xf32>), (tensor<3x2xf32>, tensor<3xf32>)
  graph.assign_variable @"bn/moving_mean", %nmm : tensor<3xf32>
  graph.assign_variable @"bn/moving_variance", %nmv : tensor<3xf32>
  graph.assign_variable @"dense/kernel", %nk : tensor<3x2xf32>
  graph.assign_variable @"bn/gamma", %ng : tensor<3xf32>
  graph.assign_variable @"dense/kernel/momentum", %nkm : tensor<3x2xf32>
  graph.assign_variable @"bn/gamma/momentum", %ngm : tensor<3xf32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// A new value computed before the variable's last read cannot be written in
// place: it is copied in at the end of the step, as are values that are not
// computed at all (an input); assigning a variable its own value is dropped.

// CHECK-LABEL: exec.program @train kind = train replicas = 1 {
// CHECK-NEXT:    %[[X:.*]] = exec.input "x" replica = 0 device = 0 : memref<2x2xf32>
// CHECK-NEXT:    %[[W:.*]] = exec.variable @w device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.variable @v device = 0 : memref<2x2xf32>
// CHECK-NEXT:    %[[N:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "relu" on <compute, 0> ins(%[[W]] : memref<2x2xf32>) outs(%[[N]] : memref<2x2xf32>) config {}
// CHECK-NEXT:    %[[S:.*]] = exec.alloc device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.launch "sigmoid" on <compute, 0> ins(%[[W]] : memref<2x2xf32>) outs(%[[S]] : memref<2x2xf32>) config {}
// CHECK-NEXT:    %[[LOSS:.*]] = exec.alloc device = 0 : memref<f32>
// CHECK-NEXT:    exec.launch "categorical_crossentropy" on <compute, 0>
// CHECK-NEXT:    exec.copy %[[N]] to %[[W]] on <compute, 0> : memref<2x2xf32>
// CHECK-NEXT:    %[[U:.*]] = exec.variable @u device = 0 : memref<2x2xf32>
// CHECK-NEXT:    exec.copy %[[X]] to %[[U]] on <compute, 0> : memref<2x2xf32>
// CHECK-NEXT:    exec.output "loss" replica = 0 %[[LOSS]] : memref<f32>
// CHECK-NEXT:  }

graph.variable @w : tensor<2x2xf32> = #graph.init<ones>
graph.variable @v : tensor<2x2xf32> = #graph.init<zeros>
graph.variable @u : tensor<2x2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "x" : tensor<2x2xf32>
  graph.output %x : tensor<2x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 2
graph.model @train_step {
  %x = graph.input "x" : tensor<2x2xf32>
  %w = graph.read_variable @w : tensor<2x2xf32>
  %v = graph.read_variable @v : tensor<2x2xf32>
  %n = graph.relu %w : tensor<2x2xf32>
  %s = graph.sigmoid %w : tensor<2x2xf32>
  %loss = graph.categorical_crossentropy %s, %x : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  graph.assign_variable @w, %n : tensor<2x2xf32>
  graph.assign_variable @v, %v : tensor<2x2xf32>
  graph.assign_variable @u, %x : tensor<2x2xf32>
  graph.output %loss : tensor<f32>
}

// -----

// A gradient that is read after its bucket's reduction has started cannot
// live in the bucket (the reduction overwrites it): it is copied in at the
// pack. The other replica's gradient is written in place.

// CHECK-LABEL: exec.program @train kind = train replicas = 2 {
// CHECK:         %[[G0:.*]] = exec.alloc device = 0 : memref<2xf32>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 0> ins(%{{.*}} : memref<2x2xf32>) outs(%[[G0]] : memref<2xf32>)
// CHECK-NEXT:    %[[BK0:.*]] = exec.alloc device = 0 : memref<2xf32>
// CHECK-NEXT:    %[[SLOT0:.*]] = exec.view %[[BK0]][0] : memref<2xf32> -> memref<2xf32>
// CHECK-NEXT:    exec.copy %[[G0]] to %[[SLOT0]] on <compute, 0> : memref<2xf32>
// CHECK-NEXT:    %[[E0:.*]] = exec.record on <compute, 0>
// CHECK:         %[[BK1:.*]] = exec.alloc device = 1 : memref<2xf32>
// CHECK-NEXT:    %[[SLOT1:.*]] = exec.view %[[BK1]][0] : memref<2xf32> -> memref<2xf32>
// CHECK-NEXT:    exec.launch "bias_add_grad" on <compute, 1> ins(%{{.*}} : memref<2x2xf32>) outs(%[[SLOT1]] : memref<2xf32>)
// CHECK-NEXT:    %[[E1:.*]] = exec.record on <compute, 1>
// CHECK-NEXT:    exec.wait %[[E0]] on <comm, 0>
// CHECK-NEXT:    exec.wait %[[E1]] on <comm, 1>
// CHECK-NEXT:    exec.all_reduce "mean" %[[BK0]], %[[BK1]] bucket = 0 : memref<2xf32>, memref<2xf32>
// CHECK-NEXT:    %[[F0:.*]] = exec.record on <comm, 0>
// CHECK:         exec.launch "relu" on <compute, 0> ins(%[[G0]] : memref<2xf32>)
// CHECK:         exec.wait %[[F0]] on <compute, 0>
// CHECK-NEXT:    exec.launch "optimizer_update" on <compute, 0>

graph.variable @b : tensor<2xf32> = #graph.init<zeros>
graph.variable @"b/m" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"b/v" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.model @m {
  %x = graph.input "x" : tensor<4x2xf32>
  graph.output %x : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> global_batch_size = 4
graph.model @train_step attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "x" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %loss0 = graph.categorical_crossentropy %x0, %x0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %g0 = graph.bias_add_grad %x0 {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
  %p0 = dist.pack %g0 {dist.device = #dist.device<0>} : tensor<2xf32> -> tensor<2xf32>
  %x1 = graph.input "x" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %loss1 = graph.categorical_crossentropy %x1, %x1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %g1 = graph.bias_add_grad %x1 {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
  %p1 = dist.pack %g1 {dist.device = #dist.device<1>} : tensor<2xf32> -> tensor<2xf32>
  %r0, %r1 = dist.all_reduce mean %p0, %p1 {bucket = 0 : i64} : tensor<2xf32>, tensor<2xf32>
  %u0 = dist.unpack %r0 {dist.device = #dist.device<0>} : tensor<2xf32> -> tensor<2xf32>
  %u1 = dist.unpack %r1 {dist.device = #dist.device<1>} : tensor<2xf32> -> tensor<2xf32>
  %late0 = graph.relu %g0 {dist.device = #dist.device<0>} : tensor<2xf32>
  %b0 = graph.read_variable @b {dist.device = #dist.device<0>} : tensor<2xf32>
  %m0 = graph.read_variable @"b/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v0 = graph.read_variable @"b/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %nb0, %nm0, %nv0 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b0 : tensor<2xf32>) grads(%u0 : tensor<2xf32>) slots(%m0, %v0 : tensor<2xf32>, tensor<2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
  graph.assign_variable @b, %nb0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"b/m", %nm0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"b/v", %nv0 {dist.device = #dist.device<0>} : tensor<2xf32>
  %b1 = graph.read_variable @b {dist.device = #dist.device<1>} : tensor<2xf32>
  %m1 = graph.read_variable @"b/m" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v1 = graph.read_variable @"b/v" {dist.device = #dist.device<1>} : tensor<2xf32>
  %nb1, %nm1, %nv1 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1 : tensor<2xf32>) grads(%u1 : tensor<2xf32>) slots(%m1, %v1 : tensor<2xf32>, tensor<2xf32>) {dist.device = #dist.device<1>} -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
  graph.assign_variable @b, %nb1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"b/m", %nm1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"b/v", %nv1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.output %loss0, %loss1 : tensor<f32>, tensor<f32>
}

// -----

// An all-reduce of anything but a bucket (here a variable, which the
// reduction must not overwrite) reduces a copy; with no bucket attribute the
// buckets are numbered in order.

// CHECK-LABEL: exec.program @eval kind = eval replicas = 2 {
// CHECK:         %[[B0:.*]] = exec.variable @b device = 0 : memref<2xf32>
// CHECK:         %[[B1:.*]] = exec.variable @b device = 1 : memref<2xf32>
// CHECK-NEXT:    %[[C0:.*]] = exec.alloc device = 0 : memref<2xf32>
// CHECK-NEXT:    exec.copy %[[B0]] to %[[C0]] on <compute, 0> : memref<2xf32>
// CHECK-NEXT:    %[[C1:.*]] = exec.alloc device = 1 : memref<2xf32>
// CHECK-NEXT:    exec.copy %[[B1]] to %[[C1]] on <compute, 1> : memref<2xf32>
// CHECK-NEXT:    %[[E0:.*]] = exec.record on <compute, 0>
// CHECK-NEXT:    %[[E1:.*]] = exec.record on <compute, 1>
// CHECK-NEXT:    exec.wait %[[E0]] on <comm, 0>
// CHECK-NEXT:    exec.wait %[[E1]] on <comm, 1>
// CHECK-NEXT:    exec.all_reduce "sum" %[[C0]], %[[C1]] bucket = 0 : memref<2xf32>, memref<2xf32>
// CHECK-NEXT:    %[[F0:.*]] = exec.record on <comm, 0>
// CHECK-NEXT:    %[[F1:.*]] = exec.record on <comm, 1>
// CHECK-NEXT:    exec.alloc device = 0
// CHECK-NEXT:    exec.wait %[[F0]] on <compute, 0>
// CHECK-NEXT:    exec.launch "bias_add" on <compute, 0> ins(%{{.*}}, %[[C0]] : memref<2x2xf32>, memref<2xf32>)
// CHECK-NEXT:    exec.alloc device = 1
// CHECK-NEXT:    exec.wait %[[F1]] on <compute, 1>
// CHECK-NEXT:    exec.launch "bias_add" on <compute, 1> ins(%{{.*}}, %[[C1]] : memref<2x2xf32>, memref<2xf32>)

graph.variable @b : tensor<2xf32> = #graph.init<zeros>
graph.model @m {
  %x = graph.input "x" : tensor<4x2xf32>
  graph.output %x : tensor<4x2xf32>
}
graph.training @m losses = [#graph.output_loss<kind = categorical_crossentropy>] optimizer = #graph.sgd<learning_rate = 0.01, momentum = 0.0, nesterov = false> global_batch_size = 4
graph.model @eval_step attributes {dist.replicas = 2 : i64} {
  %x0 = graph.input "x" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b0 = graph.read_variable @b {dist.device = #dist.device<0>} : tensor<2xf32>
  %x1 = graph.input "x" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %b1 = graph.read_variable @b {dist.device = #dist.device<1>} : tensor<2xf32>
  %r0, %r1 = dist.all_reduce sum %b0, %b1 : tensor<2xf32>, tensor<2xf32>
  %y0 = graph.bias_add %x0, %r0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2xf32>
  %y1 = graph.bias_add %x1, %r1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2xf32>
  %l0 = graph.categorical_crossentropy %y0, %x0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %l1 = graph.categorical_crossentropy %y1, %x1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  graph.output %l0, %l1 : tensor<f32>, tensor<f32>
}
