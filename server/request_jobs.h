// Turns requests into scheduler jobs (server/job.h): validates them (INVALID_ARGUMENT before
// anything is queued), estimates their cost and device memory, and binds the backend call and the
// conversion of its result into the response.
#ifndef MATRIXD_SERVER_REQUEST_JOBS_H_
#define MATRIXD_SERVER_REQUEST_JOBS_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/validation.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/client_auth.h"
#include "server/job.h"
#include "server/resident_registry.h"
#include "server/shared_memory_registry.h"

namespace matrixd::server {

// Synchronous calls: the job borrows `request` and writes into `*response`; the caller keeps both
// (and `backend`, and `registry`) alive until the job has finished. `registry` (may be null: no
// resident matrices) resolves the requests' matrix references and keeps results when
// result_options.keep_result asks for it (FAILED_PRECONDITION without a registry).
// `shared_memory` (may be null: none) resolves shared-memory operands and output targets.
// `client` (null: the anonymous client) owns what the job keeps and finds only its own resident
// matrices and regions (NOT_FOUND for another client's); the caller sets the spec's owner.
absl::StatusOr<JobSpec> MakeJob(const v1::DeterminantRequest& request,
                                v1::DeterminantResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);
absl::StatusOr<JobSpec> MakeJob(const v1::FactorizeRequest& request,
                                v1::FactorizeResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);
absl::StatusOr<JobSpec> MakeJob(const v1::SolveRequest& request, v1::SolveResponse* response,
                                Backend& backend, const Limits& limits,
                                ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);
absl::StatusOr<JobSpec> MakeJob(const v1::MultiplyRequest& request, v1::MultiplyResponse* response,
                                Backend& backend, const Limits& limits,
                                ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);
absl::StatusOr<JobSpec> MakeJob(const v1::PermanentRequest& request,
                                v1::PermanentResponse* response, Backend& backend,
                                const Limits& limits, ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);

// Submit: the job owns a copy of the request (freed when the job ends) and leaves the response in
// spec.result. Its deadline is `now` + timeout_seconds when that is > 0. INVALID_ARGUMENT also for
// a JobRequest without a request or with a negative or non-finite timeout_seconds.
absl::StatusOr<JobSpec> MakeJob(const v1::JobRequest& request, Backend& backend,
                                const Limits& limits, absl::Time now,
                                ResidentRegistry* registry = nullptr,
                                SharedMemoryRegistry* shared_memory = nullptr,
                                const ClientIdentity* client = nullptr);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_REQUEST_JOBS_H_
