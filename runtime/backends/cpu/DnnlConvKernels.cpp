//===- DnnlConvKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerDnnlConvKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
