// matrixctl shm list: the shared-memory regions registered with the server.
#ifndef MATRIXD_CLIENT_SHARED_MEMORY_COMMANDS_H_
#define MATRIXD_CLIENT_SHARED_MEMORY_COMMANDS_H_

#include <ostream>

#include "absl/status/status.h"
#include "client/client.h"

namespace matrixd {

// One line per registered region (name, kind, then key, offset, size and pinned for a system
// region or device and size for a CUDA one, age), then their count and total size. The RPC's error
// unprinted.
absl::Status RunSharedMemoryList(Client& client, std::ostream& out);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_SHARED_MEMORY_COMMANDS_H_
