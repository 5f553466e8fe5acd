"""Checks bench/mpi-allreduce --dtype bf16 --dump DIR against NumPy: every
rank's result is the bfloat16 sum of the ranks' inputs, each input rounded
to bfloat16 and their sum rounded once more, to nearest even
(bf16_rne_oracle.bf16_rne, an independent model of the rounding). With two
ranks MPI's reduction is one application of the user op, so the result is
exact, bit for bit, and the same on both ranks.

  check_bf16_allreduce.py DIR RANKS
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "compare"))
from bf16_rne_oracle import bf16_rne  # noqa: E402

folder, ranks = sys.argv[1], int(sys.argv[2])
assert ranks == 2, "the exact oracle is for two ranks"
ins = [np.fromfile(f"{folder}/in.{r}.f32", np.float32) for r in range(ranks)]
outs = [np.fromfile(f"{folder}/out.{r}.f32", np.float32) for r in range(ranks)]
expected = bf16_rne(bf16_rne(ins[0]).astype(np.float64) +
                    bf16_rne(ins[1]).astype(np.float64))
float32_sum = ins[0] + ins[1]
rounded = np.count_nonzero(expected != float32_sum)
print(f"{expected.size} values, {rounded} of them not the float32 sum")
ok = rounded > expected.size // 2
for r, out in enumerate(outs):
    wrong = np.count_nonzero(out.view(np.uint32) != expected.view(np.uint32))
    print(f"rank {r}: {wrong} values differ from the oracle")
    ok = ok and wrong == 0
print("PASSED" if ok else "FAILED")
sys.exit(0 if ok else 1)
