// RUN: graph-opt %s --split-input-file --verify-diagnostics --exec-plan-memory

// Sizes and offsets are computed with overflow checks (they wrapped round to
// negative offsets), and an arena over max-arena-bytes is refused.

// A buffer of 2^64 bytes: its size does not fit in 64 bits.
exec.program @size kind = eval replicas = 1 {
  %x = exec.input "x" replica = 0 device = 0 : memref<64xf32>
  // expected-error@+1 {{exec-plan-memory: 'memref<4611686018427387904xf32>' does not fit in the arena of device 0 of @size: its size or offset overflows 64 bits}}
  %a = exec.alloc device = 0 : memref<4611686018427387904xf32>
  exec.launch "k" on <compute, 0> ins(%x : memref<64xf32>) outs(%a : memref<4611686018427387904xf32>) config {}
}

// -----

// Two live buffers of 2^62 bytes each: the second one's end, 2^63, does not.
exec.program @offset kind = eval replicas = 1 {
  %x = exec.input "x" replica = 0 device = 0 : memref<64xf32>
  %a = exec.alloc device = 0 : memref<1152921504606846976xf32>
  %b = exec.alloc device = 0 : memref<1152921504606846976xf32>
  exec.launch "k" on <compute, 0> ins(%x : memref<64xf32>) outs(%a : memref<1152921504606846976xf32>) config {}
  // expected-error@-2 {{exec-plan-memory: 'memref<1152921504606846976xf32>' does not fit in the arena of device 0 of @offset: its size or offset overflows 64 bits}}
  exec.launch "k" on <compute, 0> ins(%a : memref<1152921504606846976xf32>) outs(%b : memref<1152921504606846976xf32>) config {}
}

// -----

// Within 64 bits, over the default limit of 64 GiB: 2 x 40 GiB live at once.
// expected-error@+1 {{exec-plan-memory: the arena of device 0 of @limit (replicas = 1) needs 80 GiB (85899345920 bytes), over the limit of 64 GiB (graphc --max-arena-bytes)}}
exec.program @limit kind = eval replicas = 1 {
  %x = exec.input "x" replica = 0 device = 0 : memref<64xf32>
  // expected-note@+1 {{its largest buffer: 40 GiB, 'memref<10737418240xf32>', written by kernel 'first'}}
  %a = exec.alloc device = 0 : memref<10737418240xf32>
  %b = exec.alloc device = 0 : memref<10737418240xf32>
  exec.launch "first" on <compute, 0> ins(%x : memref<64xf32>) outs(%a : memref<10737418240xf32>) config {}
  exec.launch "second" on <compute, 0> ins(%a : memref<10737418240xf32>) outs(%b : memref<10737418240xf32>) config {}
}
