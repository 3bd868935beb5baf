// `matrixctl load`: drives a server with many concurrent requests of one kind and measures
// throughput and latency.
#ifndef MATRIXD_CLIENT_LOAD_RUNNER_H_
#define MATRIXD_CLIENT_LOAD_RUNNER_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/load_options.h"
#include "client/load_report.h"

namespace matrixd {

// Generates the requests (MakeLoadRequests), connects clients to `target` (each with
// `client_options`, so the deadline applies per call: one per request in flight for
// LoadApi::kBlocking, one per connection for kCallback and kQueue), then sends options.requests
// requests (or as many as fit in options.duration) with that many in flight, cycling through the
// generated ones. A failed request is counted under its status code and the run goes on.
// INVALID_ARGUMENT for bad options; the health check's error when the server cannot be reached
// before the run starts.
absl::StatusOr<LoadReport> RunLoad(const std::string& target, const ClientOptions& client_options,
                                   const LoadOptions& options);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_LOAD_RUNNER_H_
