//===- DnnlPoolKernels.cpp
//----------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

namespace graph::runtime::cpu {

void registerDnnlPoolKernels(KernelRegistry &registry) {}

} // namespace graph::runtime::cpu
