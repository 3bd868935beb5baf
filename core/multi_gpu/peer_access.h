// Direct access between the GPUs of one process (NVLink or PCIe peer-to-peer).
#ifndef MATRIXD_CORE_MULTI_GPU_PEER_ACCESS_H_
#define MATRIXD_CORE_MULTI_GPU_PEER_ACCESS_H_

#include <vector>

#include "absl/status/status.h"

namespace matrixd::multi_gpu {

// Lets each of `devices` read and write the others' memory where the hardware allows it (pairs
// that cannot are left alone: peer copies between them are staged through the host). Peer access
// belongs to the CUDA contexts and stays on. Leaves an unspecified device current. INTERNAL for
// CUDA errors.
absl::Status EnablePeerAccess(const std::vector<int>& devices);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_PEER_ACCESS_H_
