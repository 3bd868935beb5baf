// The requests of a `matrixctl load` run, generated before it starts, and sending one of them.
#ifndef MATRIXD_CLIENT_LOAD_REQUESTS_H_
#define MATRIXD_CLIENT_LOAD_REQUESTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/load_options.h"

namespace matrixd {

// The most distinct requests a run cycles through, and the most bytes of matrices they may hold
// together; a run of more requests sends them again in turn.
inline constexpr int64_t kMaxDistinctLoadRequests = 64;
inline constexpr int64_t kMaxLoadRequestPoolBytes = int64_t{256} << 20;

// How many distinct requests a run of `options` cycles through: min(requests,
// kMaxDistinctLoadRequests) (that many when requests is 0), fewer when they would hold over
// kMaxLoadRequestPoolBytes, at least one. REQUIRES: ValidateLoadOptions(options) is OK.
int64_t LoadRequestPoolSize(const LoadOptions& options);

// LoadRequestPoolSize(options) requests, each the request `options.op` sends, of seeded random
// n x n matrices (RandomMatrix; the same options give the same requests, and no two requests
// share a seed). A batched LU holds `batch` matrices stacked vertically with batch_count = batch.
// Each request is the matching field of a JobRequest. INVALID_ARGUMENT when ValidateLoadOptions
// fails.
absl::StatusOr<std::vector<v1::JobRequest>> MakeLoadRequests(const LoadOptions& options);

// Sends `request` (one of MakeLoadRequests's) through the synchronous RPC of its kind and returns
// the call's status; the response is dropped. INVALID_ARGUMENT for an empty JobRequest.
absl::Status SendLoadRequest(Client& client, const v1::JobRequest& request);

// Sends `request` through the synchronous RPC of its kind (its timeout_seconds is not read) and
// returns the response as a JOB_STATE_SUCCEEDED JobUpdate holding it in the matching result field,
// as Watch delivers a finished job's. The call's error as is; INVALID_ARGUMENT for an empty
// JobRequest.
absl::StatusOr<v1::JobUpdate> CallJobRequest(Client& client, const v1::JobRequest& request);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_LOAD_REQUESTS_H_
