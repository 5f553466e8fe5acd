//===- VectorOptimizerKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerVectorOptimizerKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
