// The name of the one kernel record a CPU operation adds where its code timed none: the method
// that ran ("lu", "condensation", "getrf", "potrf", "geqrf", "gemm", "ryser", ...). The CPU
// backend and the CUDA backend's host path for small jobs (core/cuda/host_small_jobs.h) label
// their results with it.
#ifndef MATRIXD_CORE_CPU_KERNEL_NAMES_H_
#define MATRIXD_CORE_CPU_KERNEL_NAMES_H_

#include "core/operations.h"

namespace matrixd::cpu {

const char* KernelNameOf(const DeterminantResult& result);
const char* KernelNameOf(const FactorizeResult& result);
const char* KernelNameOf(const SolveResult& result);
const char* KernelNameOf(const MultiplyResult& result);
const char* KernelNameOf(const PermanentResult& result);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_KERNEL_NAMES_H_
