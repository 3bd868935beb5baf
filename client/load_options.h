// What `matrixctl load` sends: the operation, the size and dtype of its matrices, how many
// requests, how many at once, and how many matrices each carries.
#ifndef MATRIXD_CLIENT_LOAD_OPTIONS_H_
#define MATRIXD_CLIENT_LOAD_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "matrixd/v1/matrix.pb.h"

namespace matrixd {

// The RPC of each request: Determinant, Factorize (LU), Multiply (A B) or Permanent.
enum class LoadOp { kDeterminant, kLu, kGemm, kPermanent };

// How the requests are sent: kCallback, gRPC's callback API from one sender thread (the
// completions on gRPC's threads), so the client spends little per request and the server's
// ceiling shows; kBlocking, one thread per request in flight, each a blocking call (what
// matrixctl load did before 2026-11-27, and what a simple application does); kQueue, gRPC's
// completion-queue API, a queue and thread per connection (at most one per hardware thread)
// that starts each slot's next request as its answer comes in, the requests serialized once
// before the run: the least client CPU a request, for loads sharing a host with the server.
enum class LoadApi { kCallback, kBlocking, kQueue };

// "callback", "blocking" or "queue". INVALID_ARGUMENT naming the accepted names otherwise.
absl::StatusOr<LoadApi> ParseLoadApi(absl::string_view name);
absl::string_view LoadApiName(LoadApi api);

// "det", "lu", "gemm" or "permanent". INVALID_ARGUMENT naming the accepted names otherwise.
absl::StatusOr<LoadOp> ParseLoadOp(absl::string_view name);

// The name ParseLoadOp accepts.
absl::string_view LoadOpName(LoadOp op);

struct LoadOptions {
  LoadOp op = LoadOp::kDeterminant;
  int64_t n = 32;  // every matrix is n x n
  v1::DType dtype = v1::DTYPE_FLOAT64;
  // det: auto|lu|condensation; permanent: auto|ryser|glynn; lu and gemm: auto only.
  std::string method = "auto";
  // Requests to send; 0 = no count limit (then `duration` must be set).
  int64_t requests = 10000;
  int concurrency = 16;  // requests in flight at once
  // TCP connections the requests are spread over (request slot k on connection k mod
  // connections); 1: all on one connection, as one process's channels with the same options are.
  int connections = 1;
  LoadApi api = LoadApi::kCallback;
  // Matrices per request: > 1 sends one batched Factorize (batch_count = batch) of that many
  // n x n matrices; only for LoadOp::kLu. 1 sends plain single-matrix requests.
  int64_t batch = 1;
  // > 0: no new request starts after this long; the ones in flight finish.
  absl::Duration duration = absl::ZeroDuration();
  uint64_t seed = 1;  // of the random inputs
};

// OK when the options describe a run; INVALID_ARGUMENT naming the first bad field otherwise:
// n >= 1, requests >= 0 and not 0 without a duration, 1 <= concurrency <= 4096,
// 1 <= connections <= concurrency, batch >= 1 and
// > 1 only for lu, duration >= 0, a method the operation takes, a dtype other than UNSPECIFIED.
// Whether the server accepts the dtype for the operation is left to the server.
absl::Status ValidateLoadOptions(const LoadOptions& options);

// Matrices each request carries: `batch` for lu, else 1 (gemm counts one product).
int64_t MatricesPerRequest(const LoadOptions& options);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_LOAD_OPTIONS_H_
