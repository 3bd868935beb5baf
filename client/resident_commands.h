// matrixctl's resident-matrix commands: upload, download, ls, rm, the "@HANDLE" operands of the
// other commands, and the kept handles that --keep prints. Each returns the RPC's error unprinted.
#ifndef MATRIXD_CLIENT_RESIDENT_COMMANDS_H_
#define MATRIXD_CLIENT_RESIDENT_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"

namespace matrixd {

// The resident matrix whose handle starts with `prefix` (as listed by the server): errors as
// ResolveHandlePrefix's, or the ListMatrices error.
absl::StatusOr<v1::ResidentMatrix> ResolveHandle(Client& client, absl::string_view prefix);

// Where a transfer's progress bar goes: `out` when `terminal` (matrixctl: isatty(stdout)).
struct TransferDisplay {
  std::ostream* out = nullptr;
  bool terminal = false;
};

// Uploads the matrix and leaves it on the server: prints its handle alone on a line to `out`
// (for scripts), and what was sent and how fast to `log`.
absl::Status RunUpload(Client& client, const v1::Matrix& matrix, UploadOptions options,
                       const TransferDisplay& display, std::ostream& out, std::ostream& log);

// Downloads the matrix that `handle` (a unique prefix) names into the .npy file `path`.
absl::Status RunDownload(Client& client, absl::string_view handle, const std::string& path,
                         const TransferDisplay& display, std::ostream& out);

// One line per resident matrix (handle, shape, bytes, device, age, idle time, label), then the
// total against the server's limit.
absl::Status RunList(Client& client, std::ostream& out);

// Releases each named matrix (unique prefixes); stops at the first error.
absl::Status RunRelease(Client& client, const std::vector<std::string>& handles, std::ostream& out);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_RESIDENT_COMMANDS_H_
