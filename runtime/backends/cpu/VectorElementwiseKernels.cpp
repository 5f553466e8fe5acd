//===- VectorElementwiseKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerVectorElementwiseKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
