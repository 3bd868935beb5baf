// The CPU backend: LAPACKE/OpenBLAS for the dense factorizations and products, our own code for
// condensation, modular elimination, block-sparse products and permanents. Uses every core.
#ifndef MATRIXD_CORE_CPU_CPU_BACKEND_H_
#define MATRIXD_CORE_CPU_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "core/backend.h"

namespace matrixd {

struct CpuBackendOptions {
  // Worker threads for our own parallel kernels (permanent, batches of small factorizations);
  // 0 = all hardware threads.
  int threads = 0;
  // Where long permanents checkpoint their finished chunks so that a restarted job resumes
  // (core/walk_checkpoint.h); empty: no checkpoints.
  std::string state_dir = {};
};

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options = {});

}  // namespace matrixd

#endif  // MATRIXD_CORE_CPU_CPU_BACKEND_H_
