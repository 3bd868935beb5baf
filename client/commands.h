// matrixctl's operations, shared by its commands and its demo: send one request, print the
// result, the server's stats and the round trip, and return the response. The RPC's error is
// returned unprinted. With `region` (matrixctl --shm), operands in it are named as such and the
// results the request sent there (result_options.shared_memory_outputs) are read back into the
// response, as if they had come inline.
#ifndef MATRIXD_CLIENT_COMMANDS_H_
#define MATRIXD_CLIENT_COMMANDS_H_

#include <optional>
#include <ostream>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/shared_memory_region.h"

namespace matrixd {

absl::StatusOr<v1::DeterminantResponse> RunDeterminant(Client& client,
                                                       const v1::DeterminantRequest& request,
                                                       std::ostream& out);

// A factorization and what the client measured of it.
struct FactorizeReport {
  v1::FactorizeResponse response;
  // ||A X - B||_F / ||B||_F, when the request had a right-hand side.
  std::optional<double> solution_residual;
  // ||A - factors||_F / ||A||_F (LU with the row permutation).
  std::optional<double> factor_error;
};

// Also checks the answer client-side (residual and reconstruction, skipped for matrices too large
// to check in a moment). INTERNAL if the server's matrices are malformed.
absl::StatusOr<FactorizeReport> RunFactorize(Client& client, const v1::FactorizeRequest& request,
                                             std::ostream& out,
                                             const SharedMemoryRegion* region = nullptr);

// Prints the solution's shape, the server's residual when asked for, and what was kept.
absl::StatusOr<v1::SolveResponse> RunSolve(Client& client, const v1::SolveRequest& request,
                                           std::ostream& out,
                                           const SharedMemoryRegion* region = nullptr);

absl::StatusOr<v1::MultiplyResponse> RunMultiply(Client& client, const v1::MultiplyRequest& request,
                                                 std::ostream& out,
                                                 const SharedMemoryRegion* region = nullptr);

absl::StatusOr<v1::PermanentResponse> RunPermanent(Client& client,
                                                   const v1::PermanentRequest& request,
                                                   std::ostream& out);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_COMMANDS_H_
