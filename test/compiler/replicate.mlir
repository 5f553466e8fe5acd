// RUN: graph-opt %s --split-input-file --dist-replicate=num-replicas=2 | FileCheck %s
// RUN: graph-opt %s --split-input-file --dist-replicate=num-replicas=4 | FileCheck %s --check-prefix=FOUR
// RUN: graph-opt %s --split-input-file --dist-replicate=num-replicas=1 | FileCheck %s --check-prefix=ONE

// dist-replicate on hand-written steps in the form graph-build-training-step
// (and graph-fuse) leave them: docs/compiler-ir.md, sections 1 to 3.

// The MLP of docs/compiler-ir.md, section 1: x[4, 3] -> Dense(2, relu) ->
// Dense(2, softmax), categorical cross-entropy, Adam, global batch 4.
// Replica 0's ops, then replica 1's, each placed; every batch-carrying type
// has batch 4 / N; the variables (and their types) are the same symbols for
// every replica, each device updating its own mirror.

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64} {
// CHECK-NEXT: %[[X0:.*]] = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[L0:.*]] = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
// CHECK-NEXT: %[[A0:.*]] = graph.dense %[[X0]], %[[K0]] {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[B0:.*]] = graph.read_variable @"dense/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: %[[A1:.*]] = graph.bias_add %[[A0]], %[[B0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[A2:.*]] = graph.relu %[[A1]] {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[K1:.*]] = graph.read_variable @"dense_1/kernel" {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[A3:.*]] = graph.dense %[[A2]], %[[K1]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[B1:.*]] = graph.read_variable @"dense_1/bias" {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: %[[A4:.*]] = graph.bias_add %[[A3]], %[[B1]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[A5:.*]] = graph.softmax %[[A4]] {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[LOSS0:.*]] = graph.categorical_crossentropy %[[A5]], %[[L0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC0:.*]] = graph.accuracy %[[A5]], %[[L0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
// CHECK-NEXT: %[[D5:.*]] = graph.categorical_crossentropy_grad %[[A5]], %[[L0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
// CHECK-NEXT: %[[D4:.*]] = graph.softmax_grad %[[D5]], %[[A5]] {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[DB1:.*]] = graph.bias_add_grad %[[D4]] {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DK1:.*]] = graph.dense_grad_kernel %[[A2]], %[[D4]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[D2:.*]] = graph.dense_grad_input %[[D4]], %[[K1]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[D1:.*]] = graph.relu_grad %[[D2]], %[[A2]] {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK-NEXT: %[[DB0:.*]] = graph.bias_add_grad %[[D1]] {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DK0:.*]] = graph.dense_grad_kernel %[[X0]], %[[D1]] {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %[[M:.*]] = graph.read_variable @"dense_1/bias/m" {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: %[[V:.*]] = graph.read_variable @"dense_1/bias/v" {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: %[[P:.*]], %[[S:.*]]:2 = graph.optimizer_update #graph.adam<{{.*}}> params(%[[B1]] : tensor<2xf32>) grads(%[[DB1]] : tensor<2xf32>) slots(%[[M]], %[[V]] : tensor<2xf32>, tensor<2xf32>) {dist.device = #dist.device<0>} -> (tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: graph.assign_variable @"dense_1/bias", %[[P]] {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/bias/m", %[[S]]#0 {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"dense_1/bias/v", %[[S]]#1 {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK: graph.optimizer_update {{.*}} grads(%[[DK1]] : tensor<2x2xf32>) {{.*}} {dist.device = #dist.device<0>}
// CHECK: graph.optimizer_update {{.*}} grads(%[[DB0]] : tensor<2xf32>) {{.*}} {dist.device = #dist.device<0>}
// CHECK: graph.optimizer_update {{.*}} params(%[[K0]] : tensor<3x2xf32>) grads(%[[DK0]] : tensor<3x2xf32>) {{.*}} {dist.device = #dist.device<0>}
// CHECK: graph.assign_variable @"dense/kernel/v", %{{.*}}#1 {dist.device = #dist.device<0>} : tensor<3x2xf32>
// CHECK-NEXT: %[[X1:.*]] = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
// CHECK-NEXT: %[[L1:.*]] = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
// CHECK-NEXT: %[[K01:.*]] = graph.read_variable @"dense/kernel" {dist.device = #dist.device<1>} : tensor<3x2xf32>
// CHECK-NEXT: graph.dense %[[X1]], %[[K01]] {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[LOSS1:.*]] = graph.categorical_crossentropy %{{.*}}, %[[L1]] {dist.device = #dist.device<1>}
// CHECK-NEXT: %[[ACC1:.*]] = graph.accuracy %{{.*}}, %[[L1]] {dist.device = #dist.device<1>}
// CHECK: %[[DK01:.*]] = graph.dense_grad_kernel %[[X1]], %{{.*}} {dist.device = #dist.device<1>} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// CHECK: graph.optimizer_update {{.*}} params(%[[K01]] : tensor<3x2xf32>) grads(%[[DK01]] : tensor<3x2xf32>) {{.*}} {dist.device = #dist.device<1>}
// CHECK: graph.assign_variable @"dense/kernel/v", %{{.*}}#1 {dist.device = #dist.device<1>} : tensor<3x2xf32>
// CHECK-NEXT: graph.output %[[LOSS0]], %[[ACC0]], %[[LOSS1]], %[[ACC1]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
// CHECK-NEXT: }

// The evaluation step the same way: forward, loss and metric per replica.
// CHECK: graph.model @eval_step attributes {dist.replicas = 2 : i64} {
// CHECK-NEXT: %[[X0:.*]] = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[L0:.*]] = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2x2xf32>
// CHECK: %[[LOSS0:.*]] = graph.categorical_crossentropy %{{.*}}, %[[L0]] {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<f32>
// CHECK-NEXT: %[[ACC0:.*]] = graph.accuracy %{{.*}}, %[[L0]] {dist.device = #dist.device<0>}
// CHECK-NEXT: %[[X1:.*]] = graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x3xf32>
// CHECK-NEXT: %[[L1:.*]] = graph.input "labels" {dist.device = #dist.device<1>} : tensor<2x2xf32>
// CHECK: %[[LOSS1:.*]] = graph.categorical_crossentropy %{{.*}}, %[[L1]] {dist.device = #dist.device<1>}
// CHECK-NEXT: %[[ACC1:.*]] = graph.accuracy %{{.*}}, %[[L1]] {dist.device = #dist.device<1>}
// CHECK-NEXT: graph.output %[[LOSS0]], %[[ACC0]], %[[LOSS1]], %[[ACC1]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>

// Four replicas of one row each; outputs replica-major.
// FOUR-LABEL: graph.model @train_step attributes {dist.replicas = 4 : i64} {
// FOUR-NEXT: %{{.*}} = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<1x3xf32>
// FOUR-NEXT: %{{.*}} = graph.input "labels" {dist.device = #dist.device<0>} : tensor<1x2xf32>
// FOUR: graph.dense_grad_kernel {{.*}} {dist.device = #dist.device<0>} : (tensor<1x3xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
// FOUR: graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<1x3xf32>
// FOUR: graph.input "input_layer" {dist.device = #dist.device<2>} : tensor<1x3xf32>
// FOUR: graph.input "input_layer" {dist.device = #dist.device<3>} : tensor<1x3xf32>
// FOUR-NEXT: graph.input "labels" {dist.device = #dist.device<3>} : tensor<1x2xf32>
// FOUR: %[[LOSS3:.*]] = graph.categorical_crossentropy {{.*}} {dist.device = #dist.device<3>} : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<f32>
// FOUR-NEXT: %[[ACC3:.*]] = graph.accuracy {{.*}} {dist.device = #dist.device<3>}
// FOUR: graph.assign_variable @"dense/kernel/v", %{{.*}}#1 {dist.device = #dist.device<3>} : tensor<3x2xf32>
// FOUR-NEXT: graph.output %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LOSS3]], %[[ACC3]] : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
// FOUR: graph.model @eval_step attributes {dist.replicas = 4 : i64} {
// FOUR: graph.input "labels" {dist.device = #dist.device<3>} : tensor<1x2xf32>
// FOUR: graph.output {{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>

// One replica: the same step, every op placed on device 0 (the lowering
// places every op by its attribute), the model marked with one replica. The
// output gathers replicas and stays unplaced, whatever N.
// ONE-LABEL: graph.model @train_step attributes {dist.replicas = 1 : i64} {
// ONE-NEXT: %[[X:.*]] = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<4x3xf32>
// ONE-NEXT: %[[L:.*]] = graph.input "labels" {dist.device = #dist.device<0>} : tensor<4x2xf32>
// ONE-NEXT: %[[K0:.*]] = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<3x2xf32>
// ONE-NEXT: graph.dense %[[X]], %[[K0]] {dist.device = #dist.device<0>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// ONE-NOT: dist.device = #dist.device<1>
// ONE: %[[LOSS:.*]] = graph.categorical_crossentropy {{.*}} {dist.device = #dist.device<0>} : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
// ONE-NEXT: %[[ACC:.*]] = graph.accuracy {{.*}} {dist.device = #dist.device<0>}
// ONE-NOT: dist.device = #dist.device<1>
// ONE: graph.assign_variable @"dense/kernel/v", %{{.*}}#1 {dist.device = #dist.device<0>} : tensor<3x2xf32>
// ONE-NEXT: graph.output %[[LOSS]], %[[ACC]] : tensor<f32>, tensor<f32>
// ONE: graph.model @eval_step attributes {dist.replicas = 1 : i64} {
// ONE-NOT: dist.device = #dist.device<1>
// ONE: graph.output %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>

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
graph.model @eval_step {
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
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// A CNN with batch norm: the ops whose result types are written out.
// conv2d_grad_input's, max_pool2d_grad's, reshape's and batch norm's
// activation-shaped results get the per-replica batch; conv2d_grad_kernel's
// kernel-shaped result keeps its leading 4, though 4 is the global batch, and
// batch norm's per-channel results keep [2], though 2 is the local batch.
// The moving statistics each replica computes are assigned to its own mirror.

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64} {
// CHECK-NEXT: %[[X:.*]] = graph.input "input_layer" {dist.device = #dist.device<0>} : tensor<2x7x7x1xf32>
// CHECK-NEXT: %[[L:.*]] = graph.input "labels" {dist.device = #dist.device<0>} : tensor<2xi32>
// CHECK-NEXT: %[[K0:.*]] = graph.read_variable @"conv2d/kernel" {dist.device = #dist.device<0>} : tensor<4x4x1x2xf32>
// CHECK-NEXT: %[[C0:.*]] = graph.conv2d %[[X]], %[[K0]] {{.*}} {dist.device = #dist.device<0>} : (tensor<2x7x7x1xf32>, tensor<4x4x1x2xf32>) -> tensor<2x4x4x2xf32>
// CHECK: %[[BN:.*]], %[[MEAN:.*]], %[[INVSTD:.*]], %[[NEWMEAN:.*]], %[[NEWVAR:.*]] = graph.batch_norm_train %[[C0]], {{.*}} : (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[R0:.*]] = graph.relu %[[BN]] {dist.device = #dist.device<0>} : tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[K1:.*]] = graph.read_variable @"conv2d_1/kernel" {dist.device = #dist.device<0>} : tensor<3x3x2x2xf32>
// CHECK-NEXT: %[[C1:.*]] = graph.conv2d %[[R0]], %[[K1]] {{.*}} : (tensor<2x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<2x2x2x2xf32>
// CHECK-NEXT: %[[P:.*]] = graph.max_pool2d %[[C1]] {{.*}} : tensor<2x2x2x2xf32> -> tensor<2x1x1x2xf32>
// CHECK-NEXT: %[[F:.*]] = graph.flatten %[[P]] {dist.device = #dist.device<0>} : tensor<2x1x1x2xf32> -> tensor<2x2xf32>
// CHECK-NEXT: %[[K2:.*]] = graph.read_variable @"dense/kernel" {dist.device = #dist.device<0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[D:.*]] = graph.dense %[[F]], %[[K2]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: graph.sparse_categorical_crossentropy %[[D]], %[[L]] from_logits {dist.device = #dist.device<0>} : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
// CHECK-NEXT: graph.accuracy %[[D]], %[[L]] {dist.device = #dist.device<0>} : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
// CHECK-NEXT: %[[DD:.*]] = graph.sparse_categorical_crossentropy_grad %[[D]], %[[L]] from_logits {dist.device = #dist.device<0>} : tensor<2x3xf32>, tensor<2xi32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[DK2:.*]] = graph.dense_grad_kernel %[[F]], %[[DD]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[DF:.*]] = graph.dense_grad_input %[[DD]], %[[K2]] {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[DP:.*]] = graph.reshape %[[DF]] {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2x1x1x2xf32>
// CHECK-NEXT: %[[DC1:.*]] = graph.max_pool2d_grad %[[C1]], %[[P]], %[[DP]] {{.*}} {dist.device = #dist.device<0>} : (tensor<2x2x2x2xf32>, tensor<2x1x1x2xf32>, tensor<2x1x1x2xf32>) -> tensor<2x2x2x2xf32>
// CHECK-NEXT: %[[DK1:.*]] = graph.conv2d_grad_kernel %[[R0]], %[[DC1]] {{.*}} {dist.device = #dist.device<0>} : (tensor<2x4x4x2xf32>, tensor<2x2x2x2xf32>) -> tensor<3x3x2x2xf32>
// CHECK-NEXT: %[[DR0:.*]] = graph.conv2d_grad_input %[[DC1]], %[[K1]] {{.*}} {dist.device = #dist.device<0>} : (tensor<2x2x2x2xf32>, tensor<3x3x2x2xf32>) -> tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[DBN:.*]] = graph.relu_grad %[[DR0]], %[[R0]] {dist.device = #dist.device<0>} : tensor<2x4x4x2xf32>
// CHECK-NEXT: %[[DC0:.*]], %[[DG:.*]], %[[DB:.*]] = graph.batch_norm_grad %[[DBN]], %[[C0]], %[[MEAN]], %[[INVSTD]] gamma %{{.*}} {dist.device = #dist.device<0>} : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[DK0:.*]] = graph.conv2d_grad_kernel %[[X]], %[[DC0]] {{.*}} {dist.device = #dist.device<0>} : (tensor<2x7x7x1xf32>, tensor<2x4x4x2xf32>) -> tensor<4x4x1x2xf32>
// CHECK: graph.optimizer_update #graph.sgd<{{.*}}> params({{.*}}) grads(%[[DK2]], %[[DK1]], %[[DG]], %[[DB]], %[[DK0]] : tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>) {{.*}} {dist.device = #dist.device<0>}
// CHECK: graph.assign_variable @"batch_normalization/moving_mean", %[[NEWMEAN]] {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: graph.assign_variable @"batch_normalization/moving_variance", %[[NEWVAR]] {dist.device = #dist.device<0>} : tensor<2xf32>
// CHECK-NEXT: graph.input "input_layer" {dist.device = #dist.device<1>} : tensor<2x7x7x1xf32>
// CHECK: graph.conv2d_grad_input {{.*}} {dist.device = #dist.device<1>} : (tensor<2x2x2x2xf32>, tensor<3x3x2x2xf32>) -> tensor<2x4x4x2xf32>
// CHECK: graph.conv2d_grad_kernel {{.*}} {dist.device = #dist.device<1>} : (tensor<2x7x7x1xf32>, tensor<2x4x4x2xf32>) -> tensor<4x4x1x2xf32>
// CHECK: graph.assign_variable @"batch_normalization/moving_variance", %{{.*}} {dist.device = #dist.device<1>} : tensor<2xf32>
// CHECK-NEXT: graph.output %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>

// Inference-mode batch norm infers its type again.
// CHECK: graph.model @eval_step attributes {dist.replicas = 2 : i64} {
// CHECK: graph.batch_norm %{{.*}} {dist.device = #dist.device<0>} : (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4x4x2xf32>
// CHECK: graph.batch_norm %{{.*}} {dist.device = #dist.device<1>} : (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4x4x2xf32>

// With four replicas of one image each, kernel gradients keep their shapes.
// FOUR-LABEL: graph.model @train_step attributes {dist.replicas = 4 : i64} {
// FOUR: graph.conv2d_grad_input {{.*}} {dist.device = #dist.device<0>} : (tensor<1x2x2x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32>
// FOUR: graph.conv2d_grad_kernel {{.*}} {dist.device = #dist.device<0>} : (tensor<1x7x7x1xf32>, tensor<1x4x4x2xf32>) -> tensor<4x4x1x2xf32>

graph.variable @"conv2d/kernel" : tensor<4x4x1x2xf32> = #graph.init<glorot_uniform>
graph.variable @"batch_normalization/gamma" : tensor<2xf32> = #graph.init<ones>
graph.variable @"batch_normalization/beta" : tensor<2xf32> = #graph.init<zeros>
graph.variable @"batch_normalization/moving_mean" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/moving_variance" : tensor<2xf32> = #graph.init<ones> {trainable = false}
graph.variable @"conv2d_1/kernel" : tensor<3x3x2x2xf32> = #graph.init<glorot_uniform>
graph.variable @"dense/kernel" : tensor<2x3xf32> = #graph.init<glorot_uniform>
graph.variable @"conv2d/kernel/momentum" : tensor<4x4x1x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/gamma/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"batch_normalization/beta/momentum" : tensor<2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"conv2d_1/kernel/momentum" : tensor<3x3x2x2xf32> = #graph.init<zeros> {trainable = false}
graph.variable @"dense/kernel/momentum" : tensor<2x3xf32> = #graph.init<zeros> {trainable = false}
graph.model @train_step {
  %x = graph.input "input_layer" : tensor<4x7x7x1xf32>
  %labels = graph.input "labels" : tensor<4xi32>
  %k0 = graph.read_variable @"conv2d/kernel" : tensor<4x4x1x2xf32>
  %c0 = graph.conv2d %x, %k0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x7x7x1xf32>, tensor<4x4x1x2xf32>) -> tensor<4x4x4x2xf32>
  %mm = graph.read_variable @"batch_normalization/moving_mean" : tensor<2xf32>
  %mv = graph.read_variable @"batch_normalization/moving_variance" : tensor<2xf32>
  %g = graph.read_variable @"batch_normalization/gamma" : tensor<2xf32>
  %b = graph.read_variable @"batch_normalization/beta" : tensor<2xf32>
  %bn:5 = graph.batch_norm_train %c0, %mm, %mv gamma %g beta %b {epsilon = 1.0e-3 : f64, momentum = 0.99 : f64} : (tensor<4x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %r0 = graph.relu %bn#0 : tensor<4x4x4x2xf32>
  %k1 = graph.read_variable @"conv2d_1/kernel" : tensor<3x3x2x2xf32>
  %c1 = graph.conv2d %r0, %k1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<4x2x2x2xf32>
  %p = graph.max_pool2d %c1 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<4x2x2x2xf32> -> tensor<4x1x1x2xf32>
  %f = graph.flatten %p : tensor<4x1x1x2xf32> -> tensor<4x2xf32>
  %k2 = graph.read_variable @"dense/kernel" : tensor<2x3xf32>
  %d = graph.dense %f, %k2 : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %loss = graph.sparse_categorical_crossentropy %d, %labels from_logits : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  %acc = graph.accuracy %d, %labels : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  %dd = graph.sparse_categorical_crossentropy_grad %d, %labels from_logits : tensor<4x3xf32>, tensor<4xi32> -> tensor<4x3xf32>
  %dk2 = graph.dense_grad_kernel %f, %dd : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %df = graph.dense_grad_input %dd, %k2 : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %dp = graph.reshape %df : tensor<4x2xf32> -> tensor<4x1x1x2xf32>
  %dc1 = graph.max_pool2d_grad %c1, %p, %dp pool_size = [2, 2] strides = [2, 2] padding = valid : (tensor<4x2x2x2xf32>, tensor<4x1x1x2xf32>, tensor<4x1x1x2xf32>) -> tensor<4x2x2x2xf32>
  %dk1 = graph.conv2d_grad_kernel %r0, %dc1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x4x4x2xf32>, tensor<4x2x2x2xf32>) -> tensor<3x3x2x2xf32>
  %dr0 = graph.conv2d_grad_input %dc1, %k1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x2x2x2xf32>, tensor<3x3x2x2xf32>) -> tensor<4x4x4x2xf32>
  %dbn = graph.relu_grad %dr0, %r0 : tensor<4x4x4x2xf32>
  %dc0, %dg, %db = graph.batch_norm_grad %dbn, %c0, %bn#1, %bn#2 gamma %g : (tensor<4x4x4x2xf32>, tensor<4x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %dk0 = graph.conv2d_grad_kernel %x, %dc0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x7x7x1xf32>, tensor<4x4x4x2xf32>) -> tensor<4x4x1x2xf32>
  %s0 = graph.read_variable @"dense/kernel/momentum" : tensor<2x3xf32>
  %s1 = graph.read_variable @"conv2d_1/kernel/momentum" : tensor<3x3x2x2xf32>
  %s2 = graph.read_variable @"batch_normalization/gamma/momentum" : tensor<2xf32>
  %s3 = graph.read_variable @"batch_normalization/beta/momentum" : tensor<2xf32>
  %s4 = graph.read_variable @"conv2d/kernel/momentum" : tensor<4x4x1x2xf32>
  %new:5, %slots:5 = graph.optimizer_update #graph.sgd<learning_rate = 0.01, momentum = 0.9, nesterov = false> params(%k2, %k1, %g, %b, %k0 : tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>) grads(%dk2, %dk1, %dg, %db, %dk0 : tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>) slots(%s0, %s1, %s2, %s3, %s4 : tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>) -> (tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>), (tensor<2x3xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<4x4x1x2xf32>)
  graph.assign_variable @"dense/kernel", %new#0 : tensor<2x3xf32>
  graph.assign_variable @"conv2d_1/kernel", %new#1 : tensor<3x3x2x2xf32>
  graph.assign_variable @"batch_normalization/gamma", %new#2 : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta", %new#3 : tensor<2xf32>
  graph.assign_variable @"conv2d/kernel", %new#4 : tensor<4x4x1x2xf32>
  graph.assign_variable @"dense/kernel/momentum", %slots#0 : tensor<2x3xf32>
  graph.assign_variable @"conv2d_1/kernel/momentum", %slots#1 : tensor<3x3x2x2xf32>
  graph.assign_variable @"batch_normalization/gamma/momentum", %slots#2 : tensor<2xf32>
  graph.assign_variable @"batch_normalization/beta/momentum", %slots#3 : tensor<2xf32>
  graph.assign_variable @"conv2d/kernel/momentum", %slots#4 : tensor<4x4x1x2xf32>
  graph.assign_variable @"batch_normalization/moving_mean", %bn#3 : tensor<2xf32>
  graph.assign_variable @"batch_normalization/moving_variance", %bn#4 : tensor<2xf32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<4x7x7x1xf32>
  %labels = graph.input "labels" : tensor<4xi32>
  %k0 = graph.read_variable @"conv2d/kernel" : tensor<4x4x1x2xf32>
  %c0 = graph.conv2d %x, %k0 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x7x7x1xf32>, tensor<4x4x1x2xf32>) -> tensor<4x4x4x2xf32>
  %mm = graph.read_variable @"batch_normalization/moving_mean" : tensor<2xf32>
  %mv = graph.read_variable @"batch_normalization/moving_variance" : tensor<2xf32>
  %g = graph.read_variable @"batch_normalization/gamma" : tensor<2xf32>
  %b = graph.read_variable @"batch_normalization/beta" : tensor<2xf32>
  %bn = graph.batch_norm %c0, %mm, %mv gamma %g beta %b : (tensor<4x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x4x4x2xf32>
  %r0 = graph.relu %bn : tensor<4x4x4x2xf32>
  %k1 = graph.read_variable @"conv2d_1/kernel" : tensor<3x3x2x2xf32>
  %c1 = graph.conv2d %r0, %k1 strides = [1, 1] padding = valid dilations = [1, 1] : (tensor<4x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<4x2x2x2xf32>
  %p = graph.max_pool2d %c1 pool_size = [2, 2] strides = [2, 2] padding = valid : tensor<4x2x2x2xf32> -> tensor<4x1x1x2xf32>
  %f = graph.flatten %p : tensor<4x1x1x2xf32> -> tensor<4x2xf32>
  %k2 = graph.read_variable @"dense/kernel" : tensor<2x3xf32>
  %d = graph.dense %f, %k2 : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %loss = graph.sparse_categorical_crossentropy %d, %labels from_logits : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  %acc = graph.accuracy %d, %labels : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}

// -----

// The fused MLP of docs/compiler-ir.md, section 2: fused ops have written-out
// result types (fused_dense, softmax_cross_entropy: probabilities and
// logits_grad carry the batch, the loss does not); a graph.elementwise takes
// its inputs' type, and its scalar body is cloned as it is; the one
// multi-tensor update per replica is cloned like any op.

// CHECK-LABEL: graph.model @train_step attributes {dist.replicas = 2 : i64} {
// CHECK: %[[A2:.*]] = graph.fused_dense %{{.*}}, %{{.*}} bias %{{.*}} activation = relu {dist.device = #dist.device<0>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK: %[[A4:.*]] = graph.fused_dense %[[A2]], %{{.*}} bias %{{.*}} activation = none {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %{{.*}}, %[[LOSS0:.*]], %[[D4:.*]] = graph.softmax_cross_entropy %[[A4]], %{{.*}} {dist.device = #dist.device<0>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
// CHECK: %[[D2:.*]] = graph.dense_grad_input %[[D4]], %{{.*}} {dist.device = #dist.device<0>}
// CHECK-NEXT: %[[D1:.*]] = graph.elementwise %[[D2]], %[[A2]] {dist.device = #dist.device<0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK-NEXT: ^bb0(%[[DY:.*]]: tensor<f32>, %[[Y:.*]]: tensor<f32>):
// CHECK-NEXT: %[[G:.*]] = graph.relu_grad %[[DY]], %[[Y]] : tensor<f32>
// CHECK-NEXT: %[[H:.*]] = graph.tanh %[[G]] : tensor<f32>
// CHECK-NEXT: graph.yield %[[H]] : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: graph.bias_add_grad %[[D1]] {dist.device = #dist.device<0>} : tensor<2x2xf32> -> tensor<2xf32>
// CHECK: graph.optimizer_update #graph.adam<{{.*}}> params({{.*}}) grads({{.*}} : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots({{.*}}) {dist.device = #dist.device<0>}
// CHECK: graph.softmax_cross_entropy {{.*}} {dist.device = #dist.device<1>} : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>
// CHECK: graph.elementwise {{.*}} {dist.device = #dist.device<1>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK: graph.optimizer_update {{.*}} {dist.device = #dist.device<1>}
// CHECK: graph.output %[[LOSS0]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
// CHECK: graph.model @eval_step attributes {dist.replicas = 2 : i64} {

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
  %b0 = graph.read_variable @"dense/bias" : tensor<2xf32>
  %2 = graph.fused_dense %x, %k0 bias %b0 activation = relu : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %k1 = graph.read_variable @"dense_1/kernel" : tensor<2x2xf32>
  %b1 = graph.read_variable @"dense_1/bias" : tensor<2xf32>
  %4 = graph.fused_dense %2, %k1 bias %b1 activation = none : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %5, %loss, %d4 = graph.softmax_cross_entropy %4, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc = graph.accuracy %5, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  %db1 = graph.bias_add_grad %d4 : tensor<4x2xf32> -> tensor<2xf32>
  %dk1 = graph.dense_grad_kernel %2, %d4 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %d2 = graph.dense_grad_input %d4, %k1 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %d1 = graph.elementwise %d2, %2 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
  ^bb0(%dy: tensor<f32>, %y: tensor<f32>):
    %g = graph.relu_grad %dy, %y : tensor<f32>
    %h = graph.tanh %g : tensor<f32>
    graph.yield %h : tensor<f32>
  }
  %db0 = graph.bias_add_grad %d1 : tensor<4x2xf32> -> tensor<2xf32>
  %dk0 = graph.dense_grad_kernel %x, %d1 : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %mb1 = graph.read_variable @"dense_1/bias/m" : tensor<2xf32>
  %vb1 = graph.read_variable @"dense_1/bias/v" : tensor<2xf32>
  %mk1 = graph.read_variable @"dense_1/kernel/m" : tensor<2x2xf32>
  %vk1 = graph.read_variable @"dense_1/kernel/v" : tensor<2x2xf32>
  %mb0 = graph.read_variable @"dense/bias/m" : tensor<2xf32>
  %vb0 = graph.read_variable @"dense/bias/v" : tensor<2xf32>
  %mk0 = graph.read_variable @"dense/kernel/m" : tensor<3x2xf32>
  %vk0 = graph.read_variable @"dense/kernel/v" : tensor<3x2xf32>
  %p:4, %s:8 = graph.optimizer_update #graph.adam<learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1.0e-07, amsgrad = false> params(%b1, %k1, %b0, %k0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) grads(%db1, %dk1, %db0, %dk0 : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>) slots(%mb1, %vb1, %mk1, %vk1, %mb0, %vb0, %mk0, %vk0 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<3x2xf32>), (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>)
  graph.assign_variable @"dense_1/bias", %p#0 : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel", %p#1 : tensor<2x2xf32>
  graph.assign_variable @"dense/bias", %p#2 : tensor<2xf32>
  graph.assign_variable @"dense/kernel", %p#3 : tensor<3x2xf32>
  graph.assign_variable @"dense_1/bias/m", %s#0 : tensor<2xf32>
  graph.assign_variable @"dense_1/bias/v", %s#1 : tensor<2xf32>
  graph.assign_variable @"dense_1/kernel/m", %s#2 : tensor<2x2xf32>
  graph.assign_variable @"dense_1/kernel/v", %s#3 : tensor<2x2xf32>
  graph.assign_variable @"dense/bias/m", %s#4 : tensor<2xf32>
  graph.assign_variable @"dense/bias/v", %s#5 : tensor<2xf32>
  graph.assign_variable @"dense/kernel/m", %s#6 : tensor<3x2xf32>
  graph.assign_variable @"dense/kernel/v", %s#7 : tensor<3x2xf32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}
graph.model @eval_step {
  %x = graph.input "input_layer" : tensor<4x3xf32>
  %labels = graph.input "labels" : tensor<4x2xf32>
  %k0 = graph.read_variable @"dense/kernel" : tensor<3x2xf32>
  %b0 = graph.read_variable @"dense/bias" : tensor<2xf32>
  %2 = graph.fused_dense %x, %k0 bias %b0 activation = relu : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %k1 = graph.read_variable @"dense_1/kernel" : tensor<2x2xf32>
  %b1 = graph.read_variable @"dense_1/bias" : tensor<2xf32>
  %4 = graph.fused_dense %2, %k1 bias %b1 activation = none : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %5, %loss, %d4 = graph.softmax_cross_entropy %4, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>, tensor<f32>, tensor<4x2xf32>
  %acc = graph.accuracy %5, %labels : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<f32>
  graph.output %loss, %acc : tensor<f32>, tensor<f32>
}
