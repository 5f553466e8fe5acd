//===- VectorShapeKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerVectorShapeKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
