//===- VectorLossKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerVectorLossKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
