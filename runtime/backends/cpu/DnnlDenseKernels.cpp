//===- DnnlDenseKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerDnnlDenseKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
