//===- KernelsNotOnCudaYet.h - reference kernels the cuda backend lacks -*- C++
//-*-===//
//
// Kernels written since the last GPU run that the cuda backend does not
// have yet: CUDA code is written and measured when a GPU is lent, not
// blind. A plan that launches one is refused on --backend cuda, naming
// it, before anything runs (Executor::create). The registration test
// checks this list is exact, so adding the kernels means emptying it.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_CUDA_KERNELSNOTONCUDAYET_H
#define TEST_RUNTIME_CUDA_KERNELSNOTONCUDAYET_H

#include "runtime/core/Kernel.h"

#include <set>
#include <string>

namespace graph::runtime::testing {

/// The element-wise and row-wise Keras losses and metrics
/// (graph.pointwise_loss), the confusion-count metrics AUC, Precision
/// and Recall (graph.confusion_counts), mixed precision's graph.cast, and
/// dynamic loss scaling's graph.scale_by and graph.loss_scale_update.
inline const std::set<std::string> kKernelsNotOnCudaYet = {
    "pointwise_loss", "pointwise_loss_grad", "confusion_counts", "cast",
    "scale_by",       "loss_scale_update"};

/// Forms of kernels the cuda backend has that it refuses, naming them: the
/// top-k accuracies (accuracy with k > 1) and the loss-scaled optimizer
/// update.
inline bool formNotOnCudaYet(const std::string &kernel,
                             const KernelConfig &cfg) {
  return (kernel == "accuracy" && cfg.getInt("k", 1) > 1) ||
         (kernel == "optimizer_update" && cfg.getInt("loss_scaled", 0) != 0);
}

} // namespace graph::runtime::testing

#endif // TEST_RUNTIME_CUDA_KERNELSNOTONCUDAYET_H
