// RUN: graph-opt %s --split-input-file --exec-plan-memory | FileCheck %s
// Idempotence: planning a planned program changes nothing.
// RUN: graph-opt %s --split-input-file --exec-plan-memory --exec-plan-memory | FileCheck %s
// RUN: graph-opt %s --split-input-file --exec-plan-memory=alignment=64 | FileCheck %s --check-prefix=ALIGN64

// A chain: each buffer dies at the launch after the one that writes it, and
// the next alloc takes its place. Five allocs of 256 + 256 + 256 + 256 + 4 =
// 1028 bytes fit in 512. The loss is reported at the end of the step, so it
// stays live past its exec.output: the 512-byte alloc after it cannot start
// at 0 and grows the arena to 768 (1540 bytes of allocs in all).

// CHECK-LABEL: exec.program @chain kind = eval replicas = 1 attributes {arena_bytes = array<i64: 768>} {
// CHECK-NEXT:    exec.input "x" replica = 0 device = 0 : memref<64xf32>
// CHECK-NEXT:    %[[A:.*]] = exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.launch
// CHECK-NEXT:    %[[B:.*]] = exec.alloc device = 0 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.launch
// CHECK-NEXT:    %[[C:.*]] = exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.launch
// CHECK-NEXT:    %[[D:.*]] = exec.alloc device = 0 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.launch
// CHECK-NEXT:    %[[LOSS:.*]] = exec.alloc device = 0 offset = 0 : memref<f32>
// CHECK-NEXT:    exec.launch "sum"
// CHECK-NEXT:    exec.output "loss" replica = 0 %[[LOSS]]
// CHECK-NEXT:    exec.alloc device = 0 offset = 256 : memref<128xf32>
exec.program @chain kind = eval replicas = 1 {
  %x = exec.input "x" replica = 0 device = 0 : memref<64xf32>
  %a = exec.alloc device = 0 : memref<64xf32>
  exec.launch "relu" on <compute, 0> ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) config {}
  %b = exec.alloc device = 0 : memref<64xf32>
  exec.launch "relu" on <compute, 0> ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) config {}
  %c = exec.alloc device = 0 : memref<64xf32>
  exec.launch "relu" on <compute, 0> ins(%b : memref<64xf32>) outs(%c : memref<64xf32>) config {}
  %d = exec.alloc device = 0 : memref<64xf32>
  exec.launch "relu" on <compute, 0> ins(%c : memref<64xf32>) outs(%d : memref<64xf32>) config {}
  %loss = exec.alloc device = 0 : memref<f32>
  exec.launch "sum" on <compute, 0> ins(%d : memref<64xf32>) outs(%loss : memref<f32>) config {}
  exec.output "loss" replica = 0 %loss : memref<f32>
  %late = exec.alloc device = 0 : memref<128xf32>
  exec.launch "k" on <compute, 0> ins(%x : memref<64xf32>) outs(%late : memref<128xf32>) config {}
}

// -----

// Offsets are multiples of the alignment: 12 and 20 bytes take 256 each by
// default, 64 each with alignment=64.

// CHECK-LABEL: exec.program @aligned kind = eval replicas = 1 attributes {arena_bytes = array<i64: 512>} {
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<3xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 256 : memref<5xf32>
// ALIGN64-LABEL: exec.program @aligned kind = eval replicas = 1 attributes {arena_bytes = array<i64: 128>} {
// ALIGN64-NEXT:    exec.alloc device = 0 offset = 0 : memref<3xf32>
// ALIGN64-NEXT:    exec.alloc device = 0 offset = 64 : memref<5xf32>
exec.program @aligned kind = eval replicas = 1 {
  %a = exec.alloc device = 0 : memref<3xf32>
  %b = exec.alloc device = 0 : memref<5xf32>
  exec.launch "k" on <compute, 0> ins() outs(%a, %b : memref<3xf32>, memref<5xf32>) config {}
}

// -----

// One arena per device; variables and inputs are not in it.

// CHECK-LABEL: exec.program @devices kind = eval replicas = 2 attributes {arena_bytes = array<i64: 512, 1024>} {
// CHECK-NEXT:    exec.input "x" replica = 0 device = 0 : memref<64xf32>
// CHECK-NEXT:    exec.variable @w device = 0 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 1 offset = 0 : memref<256xf32>
exec.program @devices kind = eval replicas = 2 {
  %x = exec.input "x" replica = 0 device = 0 : memref<64xf32>
  %w = exec.variable @w device = 0 : memref<64xf32>
  %a = exec.alloc device = 0 : memref<64xf32>
  %b = exec.alloc device = 0 : memref<64xf32>
  %c = exec.alloc device = 1 : memref<256xf32>
  exec.launch "k" on <compute, 0> ins(%x, %w : memref<64xf32>, memref<64xf32>) outs(%a, %b : memref<64xf32>, memref<64xf32>) config {}
  exec.launch "k" on <compute, 1> ins() outs(%c : memref<256xf32>) config {}
}

// -----

// Best fit: when %a (512 bytes at 0) and %b (256 at 768) are dead, a
// 256-byte alloc takes %b's hole, and a 512-byte one then takes %a's.

// CHECK-LABEL: exec.program @best_fit kind = eval replicas = 1 attributes {arena_bytes = array<i64: 1280>} {
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<128xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 512 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 768 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 1024 : memref<64xf32>
// CHECK-NEXT:    exec.launch
// CHECK-NEXT:    exec.alloc device = 0 offset = 768 : memref<64xf32>
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<128xf32>
exec.program @best_fit kind = eval replicas = 1 {
  %a = exec.alloc device = 0 : memref<128xf32>
  %s = exec.alloc device = 0 : memref<64xf32>
  %b = exec.alloc device = 0 : memref<64xf32>
  %c = exec.alloc device = 0 : memref<64xf32>
  exec.launch "k" on <compute, 0> ins() outs(%a, %s, %b, %c : memref<128xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>) config {}
  %d = exec.alloc device = 0 : memref<64xf32>
  %e = exec.alloc device = 0 : memref<128xf32>
  exec.launch "k" on <compute, 0> ins(%s, %c : memref<64xf32>, memref<64xf32>) outs(%d, %e : memref<64xf32>, memref<128xf32>) config {}
}

// -----

// An all-reduce bucket: its gradients are written through views, and a view
// read later keeps the whole bucket live. After the reduction on the comm
// stream, device 0's compute stream waits for it, so the bucket's space is
// free from the wait on; device 1's never waits, so its bucket stays live to
// the end (offset 0 is never reused there) and the comm stream cannot race a
// reuse.

// CHECK-LABEL: exec.program @buckets kind = train replicas = 2 attributes {arena_bytes = array<i64: 768, 768>} {
// CHECK-NEXT:    %[[BK0:.*]] = exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.view %[[BK0]][0]
// CHECK-NEXT:    exec.launch "grad" on <compute, 0>
// CHECK-NEXT:    %[[BK1:.*]] = exec.alloc device = 1 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.launch "grad" on <compute, 1>
// CHECK:         exec.all_reduce
// CHECK:         exec.alloc device = 0 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.launch "relu" on <compute, 0>
// CHECK-NEXT:    exec.alloc device = 0 offset = 512 : memref<64xf32>
// CHECK-NEXT:    exec.launch "read_view" on <compute, 0>
// CHECK-NEXT:    exec.wait %{{.*}} on <compute, 0>
// CHECK-NEXT:    exec.alloc device = 0 offset = 0 : memref<64xf32>
// CHECK-NEXT:    exec.launch "update" on <compute, 0>
// CHECK-NEXT:    exec.alloc device = 1 offset = 256 : memref<64xf32>
// CHECK-NEXT:    exec.launch "relu" on <compute, 1>
// CHECK-NEXT:    exec.alloc device = 1 offset = 512 : memref<64xf32>
// CHECK-NEXT:    exec.launch "update" on <compute, 1>
// CHECK-NEXT:    exec.alloc device = 1 offset = 256 : memref<64xf32>
exec.program @buckets kind = train replicas = 2 {
  %bk0 = exec.alloc device = 0 : memref<64xf32>
  %v0 = exec.view %bk0[0] : memref<64xf32> -> memref<32xf32>
  exec.launch "grad" on <compute, 0> ins() outs(%v0 : memref<32xf32>) config {}
  %bk1 = exec.alloc device = 1 : memref<64xf32>
  exec.launch "grad" on <compute, 1> ins() outs(%bk1 : memref<64xf32>) config {}
  %e0 = exec.record on <compute, 0>
  exec.wait %e0 on <comm, 0>
  %e1 = exec.record on <compute, 1>
  exec.wait %e1 on <comm, 1>
  exec.all_reduce "mean" %bk0, %bk1 bucket = 0 : memref<64xf32>, memref<64xf32>
  %f0 = exec.record on <comm, 0>
  %f1 = exec.record on <comm, 1>
  %t0 = exec.alloc device = 0 : memref<64xf32>
  exec.launch "relu" on <compute, 0> ins() outs(%t0 : memref<64xf32>) config {}
  %r0 = exec.alloc device = 0 : memref<64xf32>
  exec.launch "read_view" on <compute, 0> ins(%v0 : memref<32xf32>) outs(%r0 : memref<64xf32>) config {}
  exec.wait %f0 on <compute, 0>
  %u0 = exec.alloc device = 0 : memref<64xf32>
  exec.launch "update" on <compute, 0> ins(%t0, %r0 : memref<64xf32>, memref<64xf32>) outs(%u0 : memref<64xf32>) config {}
  %t1 = exec.alloc device = 1 : memref<64xf32>
  exec.launch "relu" on <compute, 1> ins() outs(%t1 : memref<64xf32>) config {}
  %u1 = exec.alloc device = 1 : memref<64xf32>
  exec.launch "update" on <compute, 1> ins(%t1 : memref<64xf32>) outs(%u1 : memref<64xf32>) config {}
  %w1 = exec.alloc device = 1 : memref<64xf32>
  exec.launch "relu" on <compute, 1> ins() outs(%w1 : memref<64xf32>) config {}
}
