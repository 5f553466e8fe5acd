// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=0 | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=24 | FileCheck %s --check-prefixes=CHECK,SMALL
// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=8 | FileCheck %s --check-prefixes=CHECK,TINY
// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=0 | FileCheck %s --check-prefix=STATS
// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=0 --dist-insert-all-reduce=bucket-bytes=0 | FileCheck %s --check-prefix=STATS
// The pass is idempotent: reduced gradients come out of a dist.unpack.
// RUN: graph-opt %s --split-input-file --dist-insert-all-reduce=bucket-bytes=0 --dist-insert-all-reduce=bucket-bytes=0 | FileCheck %s --check-prefixes=CHECK,ONE

// dist-insert-all-reduce on hand-written replicated steps, in the form
// dist-replicate leaves them (docs/compiler-ir.md, sections 3 and 4):
//   ONE   bucket-bytes=0: one bucket for every gradient;
//   SMALL bucket-bytes=24: several buckets, in the order backward produces
//         the gradients;
//   TINY  bucket-bytes=8: gradients larger than a bucket get one each;
//   STATS the batch norms' moving statistics (with bucket-bytes=0).

// The fused MLP of docs/compiler-ir.md, two replicas. Backward produces
// db1 (8 bytes), dk1 (16), db0 (8), dk0 (24), in that order.

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64} {

// One bucket of 14 floats: each replica packs right after its last gradient,
// the all-reduce follows the last pack, each replica unpacks, and every
// update takes its own replica's reduced gradients.
// ONE: %[[DB1_0:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
// ONE-NEXT: %[[DK1_0:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: graph.dense_grad_input %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: graph.relu_grad %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: %[[DB0_0:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: %[[DK0_0:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: %[[P0:.*]] = dist.pack %[[DB1_0]], %[[DK1_0]], %[[DB0_0]], %[[DK0_0]] {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32> -> tensor<14xf32>
// ONE: %[[DB1_1:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
// ONE-NEXT: %[[DK1_1:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: graph.dense_grad_input %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: graph.relu_grad %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: %[[DB0_1:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: %[[DK0_1:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: %[[P1:.*]] = dist.pack %[[DB1_1]], %[[DK1_1]], %[[DB0_1]], %[[DK0_1]] {dist.device = #dist.device<1>} : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32> -> tensor<14xf32>
// ONE-NEXT: %[[R:.*]]:2 = dist.all_reduce mean %[[P0]], %[[P1]] {bucket = 0 : i64} : tensor<14xf32>, tensor<14xf32>
// ONE-NEXT: %[[U0:.*]]:4 = dist.unpack %[[R]]#0 {dist.device = #dist.device<0>} : tensor<14xf32> -> tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>
// ONE-NEXT: %[[U1:.*]]:4 = dist.unpack %[[R]]#1 {dist.device = #dist.device<1>} : tensor<14xf32> -> tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>
// The updates wait for the reduction: they and their assignments move after
// it, replica 0's first, and the output stays last.
// ONE-NOT: dist.all_reduce
// ONE: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads(%[[U0]]#0, %[[U0]]#1, %[[U0]]#2, %[[U0]]#3 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots({{.*}}) {dist.device = #dist.device<0>}
// ONE-COUNT-12: graph.assign_variable {{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads(%[[U1]]#0, %[[U1]]#1, %[[U1]]#2, %[[U1]]#3 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots({{.*}}) {dist.device = #dist.device<1>}
// ONE-COUNT-12: graph.assign_variable {{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: graph.output

// Three buckets: {db1, dk1} (24 bytes), {db0}, {dk0}. Bucket 0 is packed as
// soon as dk1 exists and reduced before replica 1 runs the backward of the
// first layer (dense_grad_input onwards): the reduction overlaps backward.
// SMALL: %[[DB1_0:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[DK1_0:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[P0_0:.*]] = dist.pack %[[DB1_0]], %[[DK1_0]] {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<2x2xf32> -> tensor<6xf32>
// SMALL-NEXT: graph.dense_grad_input %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: graph.relu_grad %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[DB0_0:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[P1_0:.*]] = dist.pack %[[DB0_0]] {dist.device = #dist.device<0>} : tensor<2xf32> -> tensor<2xf32>
// SMALL-NEXT: %[[DK0_0:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[P2_0:.*]] = dist.pack %[[DK0_0]] {dist.device = #dist.device<0>} : tensor<3x2xf32> -> tensor<6xf32>
// SMALL: %[[DB1_1:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[DK1_1:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[P0_1:.*]] = dist.pack %[[DB1_1]], %[[DK1_1]] {dist.device = #dist.device<1>} : tensor<2xf32>, tensor<2x2xf32> -> tensor<6xf32>
// SMALL-NEXT: %[[R0:.*]]:2 = dist.all_reduce mean %[[P0_0]], %[[P0_1]] {bucket = 0 : i64} : tensor<6xf32>, tensor<6xf32>
// SMALL-NEXT: %[[U0_0:.*]]:2 = dist.unpack %[[R0]]#0 {dist.device = #dist.device<0>} : tensor<6xf32> -> tensor<2xf32>, tensor<2x2xf32>
// SMALL-NEXT: %[[U0_1:.*]]:2 = dist.unpack %[[R0]]#1 {dist.device = #dist.device<1>} : tensor<6xf32> -> tensor<2xf32>, tensor<2x2xf32>
// SMALL-NEXT: graph.dense_grad_input %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: graph.relu_grad %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[DB0_1:.*]] = graph.bias_add_grad %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[P1_1:.*]] = dist.pack %[[DB0_1]] {dist.device = #dist.device<1>} : tensor<2xf32> -> tensor<2xf32>
// SMALL-NEXT: %[[R1:.*]]:2 = dist.all_reduce mean %[[P1_0]], %[[P1_1]] {bucket = 1 : i64} : tensor<2xf32>, tensor<2xf32>
// SMALL-NEXT: %[[U1_0:.*]] = dist.unpack %[[R1]]#0 {dist.device = #dist.device<0>} : tensor<2xf32> -> tensor<2xf32>
// SMALL-NEXT: %[[U1_1:.*]] = dist.unpack %[[R1]]#1 {dist.device = #dist.device<1>} : tensor<2xf32> -> tensor<2xf32>
// SMALL-NEXT: %[[DK0_1:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[P2_1:.*]] = dist.pack %[[DK0_1]] {dist.device = #dist.device<1>} : tensor<3x2xf32> -> tensor<6xf32>
// SMALL-NEXT: %[[R2:.*]]:2 = dist.all_reduce mean %[[P2_0]], %[[P2_1]] {bucket = 2 : i64} : tensor<6xf32>, tensor<6xf32>
// SMALL-NEXT: %[[U2_0:.*]] = dist.unpack %[[R2]]#0 {dist.device = #dist.device<0>} : tensor<6xf32> -> tensor<3x2xf32>
// SMALL-NEXT: %[[U2_1:.*]] = dist.unpack %[[R2]]#1 {dist.device = #dist.device<1>} : tensor<6xf32> -> tensor<3x2xf32>
// SMALL: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads(%[[U0_0]]#0, %[[U0_0]]#1, %[[U1_0]], %[[U2_0]] : {{.*}}) slots({{.*}}) {dist.device = #dist.device<0>}
// SMALL: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads(%[[U0_1]]#0, %[[U0_1]]#1, %[[U1_1]], %[[U2_1]] : {{.*}}) slots({{.*}}) {dist.device = #dist.device<1>}

// The evaluation step has no gradient and stays as it is.
// CHECK: graph.model @eval_step attributes {dist.replicas = 2 : i64} {
// CHECK-NOT: dist.pack
// CHECK-NOT: dist.all_reduce
// CHECK: graph.output

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
graph.model @train_step attributes {dist.replicas = 2 : i64} {
  %x_0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %labels_0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v2_0 = graph.fused_dense %x_0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v4_0 = graph.fused_dense %v2_0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %v5_0, %loss_0, %d4_0 = graph.softmax_cross_entropy %v4_0, %labels_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc_0 = graph.accuracy %v5_0, %labels_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %db1_0 = graph.bias_add_grad %d4_0 {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk1_0 = graph.dense_grad_kernel %v2_0, %d4_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d2_0 = graph.dense_grad_input %d4_0, %k1_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d1_0 = graph.relu_grad %d2_0, %v2_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %db0_0 = graph.bias_add_grad %d1_0 {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk0_0 = graph.dense_grad_kernel %x_0, %d1_0 {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %mb1_0 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %vb1_0 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %mk1_0 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %vk1_0 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %mb0_0 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %vb0_0 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %mk0_0 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %vk0_0 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %p_0:4, %s_0:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_0, %k1_0, %b0_0, %k0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%db1_0, %dk1_0, %db0_0, %dk0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%mb1_0, %vb1_0, %mk1_0, %vk1_0, %mb0_0, %vb0_0, %mk0_0, %vk0_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %p_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %p_0#1 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %p_0#2 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %p_0#3 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %s_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %s_0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %s_0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %s_0#3 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %s_0#4 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %s_0#5 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %s_0#6 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %s_0#7 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %x_1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
  %labels_1 = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %k0_1 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %b0_1 = graph.read_variable @"dense/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v2_1 = graph.fused_dense %x_1, %k0_1 bias %b0_1 activation = relu {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_1 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %b1_1 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v4_1 = graph.fused_dense %v2_1, %k1_1 bias %b1_1 activation = none {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %v5_1, %loss_1, %d4_1 = graph.softmax_cross_entropy %v4_1, %labels_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc_1 = graph.accuracy %v5_1, %labels_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %db1_1 = graph.bias_add_grad %d4_1 {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk1_1 = graph.dense_grad_kernel %v2_1, %d4_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d2_1 = graph.dense_grad_input %d4_1, %k1_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d1_1 = graph.relu_grad %d2_1, %v2_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %db0_1 = graph.bias_add_grad %d1_1 {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<2xf32>
  %dk0_1 = graph.dense_grad_kernel %x_1, %d1_1 {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %mb1_1 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<1>} : tensor<2xf32>
  %vb1_1 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<1>} : tensor<2xf32>
  %mk1_1 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %vk1_1 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %mb0_1 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<1>} : tensor<2xf32>
  %vb0_1 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<1>} : tensor<2xf32>
  %mk0_1 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %vk0_1 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %p_1:4, %s_1:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_1, %k1_1, %b0_1, %k0_1 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%db1_1, %dk1_1, %db0_1, %dk0_1 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%mb1_1, %vb1_1, %mk1_1, %vk1_1, %mb0_1, %vb0_1, %mk0_1, %vk0_1 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<1>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %p_1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %p_1#1 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %p_1#2 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %p_1#3 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %s_1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %s_1#1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %s_1#2 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %s_1#3 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %s_1#4 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %s_1#5 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %s_1#6 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %s_1#7 {dist.device = #dist.device<1>} : tensor<3x2xf32>
  graph.output %loss_0, %acc_0, %loss_1, %acc_1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
graph.model @eval_step attributes {dist.replicas = 2 : i64} {
  %x_0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
  %labels_0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v2_0 = graph.fused_dense %x_0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v4_0 = graph.fused_dense %v2_0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %v5_0, %loss_0, %d4_0 = graph.softmax_cross_entropy %v4_0, %labels_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc_0 = graph.accuracy %v5_0, %labels_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  %x_1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
  %labels_1 = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %k0_1 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<3x2xf32>
  %b0_1 = graph.read_variable @"dense/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v2_1 = graph.fused_dense %x_1, %k0_1 bias %b0_1 activation = relu {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %k1_1 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %b1_1 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<1>} : tensor<2xf32>
  %v4_1 = graph.fused_dense %v2_1, %k1_1 bias %b1_1 activation = none {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %v5_1, %loss_1, %d4_1 = graph.softmax_cross_entropy %v4_1, %labels_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %acc_1 = graph.accuracy %v5_1, %labels_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
  graph.output %loss_0, %acc_0, %loss_1, %acc_1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// Batch norm: one op produces two gradients (gamma's and beta's). The update
// lists gamma, beta, kernel; backward produces the kernel's gradient first,
// so buckets start with it, and the rewiring follows each gradient.

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64} {
// CHECK: %[[DK_0:.*]] = graph.dense_grad_kernel %{{.*}} {dist.device = #dist.device<0>}

// ONE: %{{.*}}, %[[DG_0:.*]], %[[DB_0:.*]] = graph.batch_norm_grad %{{.*}} {dist.device = #dist.device<0>}
// ONE-NEXT: %[[P_0:.*]] = dist.pack %[[DK_0]], %[[DG_0]], %[[DB_0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<8xf32>
// ONE: %{{.*}}, %[[DG_1:.*]], %[[DB_1:.*]] = graph.batch_norm_grad %{{.*}} {dist.device = #dist.device<1>}
// ONE-NEXT: %[[P_1:.*]] = dist.pack %{{.*}}, %[[DG_1]], %[[DB_1]] {dist.device = #dist.device<1>}
// ONE-NEXT: %[[R:.*]]:2 = dist.all_reduce mean %[[P_0]], %[[P_1]] {bucket = 0 : i64} : tensor<8xf32>, tensor<8xf32>
// ONE-NEXT: %[[U_0:.*]]:3 = dist.unpack %[[R]]#0 {dist.device = #dist.device<0>} : tensor<8xf32> -> tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
// ONE-NEXT: %[[U_1:.*]]:3 = dist.unpack %[[R]]#1 {dist.device = #dist.device<1>}
// ONE: graph.optimizer_update #graph.sgd<{{.*}}> params({{.*}}) grads(%[[U_0]]#1, %[[U_0]]#2, %[[U_0]]#0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {{.*}} {dist.device = #dist.device<0>}
// ONE: graph.optimizer_update #graph.sgd<{{.*}}> params({{.*}}) grads(%[[U_1]]#1, %[[U_1]]#2, %[[U_1]]#0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {{.*}} {dist.device = #dist.device<1>}

// {dk, dgamma} (24 bytes) and {dbeta}: two buckets closed at one op; their
// packs, and then their reductions, keep the bucket order.
// SMALL: %{{.*}}, %[[DG_0:.*]], %[[DB_0:.*]] = graph.batch_norm_grad %{{.*}} {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[P0_0:.*]] = dist.pack %[[DK_0]], %[[DG_0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2xf32> -> tensor<6xf32>
// SMALL-NEXT: %[[P1_0:.*]] = dist.pack %[[DB_0]] {dist.device = #dist.device<0>} : tensor<2xf32> -> tensor<2xf32>
// SMALL: %{{.*}}, %[[DG_1:.*]], %[[DB_1:.*]] = graph.batch_norm_grad %{{.*}} {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[P0_1:.*]] = dist.pack %{{.*}}, %[[DG_1]] {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[R0:.*]]:2 = dist.all_reduce mean %[[P0_0]], %[[P0_1]] {bucket = 0 : i64} : tensor<6xf32>, tensor<6xf32>
// SMALL-NEXT: %[[U0_0:.*]]:2 = dist.unpack %[[R0]]#0 {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[U0_1:.*]]:2 = dist.unpack %[[R0]]#1 {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[P1_1:.*]] = dist.pack %[[DB_1]] {dist.device = #dist.device<1>}
// SMALL-NEXT: %[[R1:.*]]:2 = dist.all_reduce mean %[[P1_0]], %[[P1_1]] {bucket = 1 : i64} : tensor<2xf32>, tensor<2xf32>
// SMALL-NEXT: %[[U1_0:.*]] = dist.unpack %[[R1]]#0 {dist.device = #dist.device<0>}
// SMALL-NEXT: %[[U1_1:.*]] = dist.unpack %[[R1]]#1 {dist.device = #dist.device<1>}
// SMALL: graph.optimizer_update {{.*}} grads(%[[U0_0]]#1, %[[U1_0]], %[[U0_0]]#0 : {{.*}}) {{.*}} {dist.device = #dist.device<0>}
// SMALL: graph.optimizer_update {{.*}} grads(%[[U0_1]]#1, %[[U1_1]], %[[U0_1]]#0 : {{.*}}) {{.*}} {dist.device = #dist.device<1>}

// The kernel's 16 bytes exceed 8: a bucket of its own; then one bucket per
// 8-byte gradient.
// TINY-NEXT: %[[P0_0:.*]] = dist.pack %[[DK_0]] {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<4xf32>
// TINY-NEXT: graph.dense_grad_input
// TINY-NEXT: %{{.*}}, %[[DG_0:.*]], %[[DB_0:.*]] = graph.batch_norm_grad %{{.*}} {dist.device = #dist.device<0>}
// TINY-NEXT: %[[P1_0:.*]] = dist.pack %[[DG_0]] {dist.device = #dist.device<0>}
// TINY-NEXT: %[[P2_0:.*]] = dist.pack %[[DB_0]] {dist.device = #dist.device<0>}
// TINY: %[[P0_1:.*]] = dist.pack %{{.*}} {dist.device = #dist.device<1>} : tensor<2x2xf32> -> tensor<4xf32>
// TINY-NEXT: dist.all_reduce mean %[[P0_0]], %[[P0_1]] {bucket = 0 : i64} : tensor<4xf32>, tensor<4xf32>
// TINY: dist.all_reduce mean %[[P1_0]], %{{.*}} {bucket = 1 : i64} : tensor<2xf32>, tensor<2xf32>
// TINY: dist.all_reduce mean %[[P2_0]], %{{.*}} {bucket = 2 : i64} : tensor<2xf32>, tensor<2xf32>
// The moving statistics: one bucket of their own, whatever bucket-bytes says.
// TINY: dist.all_reduce mean %{{.*}}, %{{.*}} {bucket = 3 : i64} : tensor<4xf32>, tensor<4xf32>
// TINY-NOT: dist.all_reduce
// TINY: graph.optimizer_update

// Each replica's new moving statistics are packed as soon as its
// batch_norm_train has them, averaged in a bucket after the gradients', and
// every replica assigns the mean (MirroredStrategy's ON_READ/MEAN
// statistics, kept equal across replicas).
// STATS: %{{.*}}, %{{.*}}, %{{.*}}, %[[NM0:[a-z_0-9]+]], %[[NV0:[a-z_0-9]+]] = graph.batch_norm_train {{.*}}dist.device<0>
// STATS-NEXT: %[[SP0:.*]] = dist.pack %[[NM0]], %[[NV0]] {dist.device = #dist.device<0>} : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
// STATS: %{{.*}}, %{{.*}}, %{{.*}}, %[[NM1:[a-z_0-9]+]], %[[NV1:[a-z_0-9]+]] = graph.batch_norm_train {{.*}}dist.device<1>
// STATS-NEXT: %[[SP1:.*]] = dist.pack %[[NM1]], %[[NV1]] {dist.device = #dist.device<1>}
// STATS: dist.all_reduce mean {{.*}} {bucket = 0 : i64}
// STATS-NEXT: dist.unpack
// STATS-NEXT: dist.unpack
// STATS-NEXT: %[[SR:.*]]:2 = dist.all_reduce mean %[[SP0]], %[[SP1]] {bucket = 1 : i64} : tensor<4xf32>, tensor<4xf32>
// STATS-NEXT: %[[SU0:.*]]:2 = dist.unpack %[[SR]]#0 {dist.device = #dist.device<0>}
// STATS-NEXT: %[[SU1:.*]]:2 = dist.unpack %[[SR]]#1 {dist.device = #dist.device<1>}
// STATS: graph.assign_variable @"batch_normalization/moving_mean", %[[SU0]]#0 {dist.device = #dist.device<0>}
// STATS-NEXT: graph.assign_variable @"batch_normalization/moving_variance", %[[SU0]]#1 {dist.device = #dist.device<0>}
// STATS-NEXT: graph.assign_variable @"batch_normalization/moving_mean", %[[SU1]]#0 {dist.device = #dist.device<1>}
// STATS-NEXT: graph.assign_variable @"batch_normalization/moving_variance", %[[SU1]]#1 {dist.device = #dist.device<1>}
// STATS-NOT: dist.all_reduce

graph.variable @"batch_normalization/gamma" : tensor<2xf32> = #graph.init<ones>
graph.variable @"batch_normalization/beta" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"batch_normalization/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.variable @"dense/kernel" : tensor<2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"batch_normalization/gamma/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/beta/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense/kernel/momentum" : tensor<2x2xf32> = #graph.init<zeros> {trainable = false}
graph.model @train_step attributes {dist.replicas = 2 : i64} {
  %x_0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %labels_0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %mm_0 = graph.read_variable @"batch_normalization/moving_mean" {dist.device = #dist.device<0>} : tensor<2xf32>
  %mv_0 = graph.read_variable @"batch_normalization/moving_variance" {dist.device = #dist.device<0>} : tensor<2xf32>
  %g_0 = graph.read_variable @"batch_normalization/gamma" {dist.device = #dist.device<0>} : tensor<2xf32>
  %b_0 = graph.read_variable @"batch_normalization/beta" {dist.device = #dist.device<0>} : tensor<2xf32>
  %bn_0, %mean_0, %invstd_0, %newmean_0, %newvar_0 = graph.batch_norm_train %x_0, %mm_0, %mv_0 gamma %g_0 beta %b_0 {dist.device = #dist.device<0>, epsilon = 1.0e-3 : f64, momentum = 0.5 : f64} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %k_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %y_0 = graph.dense %bn_0, %k_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %p_0, %loss_0, %dy_0 = graph.softmax_cross_entropy %y_0, %labels_0 {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %dk_0 = graph.dense_grad_kernel %bn_0, %dy_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dbn_0 = graph.dense_grad_input %dy_0, %k_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dx_0, %dg_0, %db_0 = graph.batch_norm_grad %dbn_0, %x_0, %mean_0, %invstd_0 gamma %g_0 {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %sg_0 = graph.read_variable @"batch_normalization/gamma/momentum" {dist.device = #dist.device<0>} : tensor<2xf32>
  %sb_0 = graph.read_variable @"batch_normalization/beta/momentum" {dist.device = #dist.device<0>} : tensor<2xf32>
  %sk_0 = graph.read_variable @"dense/kernel/momentum" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %new_0:3, %slots_0:3 = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> params(%g_0, %b_0, %k_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) grads(%dg_0, %db_0, %dk_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) slots(%sg_0, %sb_0, %sk_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>)
  graph.assign_variable @"batch_normalization/gamma", %new_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta", %new_0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %new_0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"batch_normalization/gamma/momentum", %slots_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta/momentum", %slots_0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/momentum", %slots_0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"batch_normalization/moving_mean", %newmean_0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/moving_variance", %newvar_0 {dist.device = #dist.device<0>} : tensor<2xf32>
  %x_1 = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %labels_1 = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %mm_1 = graph.read_variable @"batch_normalization/moving_mean" {dist.device = #dist.device<1>} : tensor<2xf32>
  %mv_1 = graph.read_variable @"batch_normalization/moving_variance" {dist.device = #dist.device<1>} : tensor<2xf32>
  %g_1 = graph.read_variable @"batch_normalization/gamma" {dist.device = #dist.device<1>} : tensor<2xf32>
  %b_1 = graph.read_variable @"batch_normalization/beta" {dist.device = #dist.device<1>} : tensor<2xf32>
  %bn_1, %mean_1, %invstd_1, %newmean_1, %newvar_1 = graph.batch_norm_train %x_1, %mm_1, %mv_1 gamma %g_1 beta %b_1 {dist.device = #dist.device<1>, epsilon = 1.0e-3 : f64, momentum = 0.5 : f64} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %k_1 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %y_1 = graph.dense %bn_1, %k_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %p_1, %loss_1, %dy_1 = graph.softmax_cross_entropy %y_1, %labels_1 {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
  %dk_1 = graph.dense_grad_kernel %bn_1, %dy_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dbn_1 = graph.dense_grad_input %dy_1, %k_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %dx_1, %dg_1, %db_1 = graph.batch_norm_grad %dbn_1, %x_1, %mean_1, %invstd_1 gamma %g_1 {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %sg_1 = graph.read_variable @"batch_normalization/gamma/momentum" {dist.device = #dist.device<1>} : tensor<2xf32>
  %sb_1 = graph.read_variable @"batch_normalization/beta/momentum" {dist.device = #dist.device<1>} : tensor<2xf32>
  %sk_1 = graph.read_variable @"dense/kernel/momentum" {dist.device = #dist.device<1>} : tensor<2x2xf32>
  %new_1:3, %slots_1:3 = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> params(%g_1, %b_1, %k_1 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) grads(%dg_1, %db_1, %dk_1 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) slots(%sg_1, %sb_1, %sk_1 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {dist.device = #dist.device<1>} -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>)
  graph.assign_variable @"batch_normalization/gamma", %new_1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta", %new_1#1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %new_1#2 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"batch_normalization/gamma/momentum", %slots_1#0 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta/momentum", %slots_1#1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/momentum", %slots_1#2 {dist.device = #dist.device<1>} : tensor<2x2xf32>
  graph.assign_variable @"batch_normalization/moving_mean", %newmean_1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.assign_variable @"batch_normalization/moving_variance", %newvar_1 {dist.device = #dist.device<1>} : tensor<2xf32>
  graph.output %loss_0, %loss_1 : tensor<f32>, tensor<f32>
}

// -----

// One replica: nothing to average, nothing changes.
// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 1 : i64} {
// CHECK-NOT: dist.pack
// CHECK-NOT: dist.all_reduce
// CHECK-NOT: dist.unpack
// CHECK: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads(%[[DB1:.*]], %[[DK1:.*]], %[[DB0:.*]], %[[DK0:.*]] : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots({{.*}}) {dist.device = #dist.device<0>}

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
graph.model @train_step attributes {dist.replicas = 1 : i64} {
  %x_0 = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<4x3xf32>
  %labels_0 = graph.input "labels" {dist.device = #dist.device<0>} : tensor<4x2xf32>
  %k0_0 = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %b0_0 = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v2_0 = graph.fused_dense %x_0, %k0_0 bias %b0_0 activation = relu {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %k1_0 = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %b1_0 = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
  %v4_0 = graph.fused_dense %v2_0, %k1_0 bias %b1_0 activation = none {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %v5_0, %loss_0, %d4_0 = graph.softmax_cross_entropy %v4_0, %labels_0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc_0 = graph.accuracy %v5_0, %labels_0 {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %db1_0 = graph.bias_add_grad %d4_0 {dist.device = #dist.device<0>} : tensor<4x2xf32> -> tensor<2xf32>
  %dk1_0 = graph.dense_grad_kernel %v2_0, %d4_0 {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %d2_0 = graph.dense_grad_input %d4_0, %k1_0 {dist.device = #dist.device<0>} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %d1_0 = graph.relu_grad %d2_0, %v2_0 {dist.device = #dist.device<0>} : tensor<4x2xf32>
  %db0_0 = graph.bias_add_grad %d1_0 {dist.device = #dist.device<0>} : tensor<4x2xf32> -> tensor<2xf32>
  %dk0_0 = graph.dense_grad_kernel %x_0, %d1_0 {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %mb1_0 = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %vb1_0 = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %mk1_0 = graph.read_variable @"dense_1/kernel/m" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %vk1_0 = graph.read_variable @"dense_1/kernel/v" {dist.device = #dist.device<0>} : tensor<2x2xf32>
  %mb0_0 = graph.read_variable @"dense/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
  %vb0_0 = graph.read_variable @"dense/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
  %mk0_0 = graph.read_variable @"dense/kernel/m" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %vk0_0 = graph.read_variable @"dense/kernel/v" {dist.device = #dist.device<0>} : tensor<3x2xf32>
  %p_0:4, %s_0:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1_0, %k1_0, %b0_0, %k0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%db1_0, %dk1_0, %db0_0, %dk0_0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%mb1_0, %vb1_0, %mk1_0, %vk1_0, %mb0_0, %vb0_0, %mk0_0, %vk0_0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %p_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %p_0#1 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %p_0#2 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %p_0#3 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %s_0#0 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %s_0#1 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %s_0#2 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %s_0#3 {dist.device = #dist.device<0>} : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %s_0#4 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %s_0#5 {dist.device = #dist.device<0>} : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %s_0#6 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %s_0#7 {dist.device = #dist.device<0>} : tensor<3x2xf32>
  graph.output %loss_0, %acc_0 : tensor<f32>, tensor<f32>
}
