// What a `matrixctl load` run measured: requests and matrices done, errors by status code,
// latencies, wall time; their percentiles and rates, and the table matrixctl prints.
#ifndef MATRIXD_CLIENT_LOAD_REPORT_H_
#define MATRIXD_CLIENT_LOAD_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/load_options.h"

namespace matrixd {

// The failures of one status code.
struct LoadErrors {
  int64_t count = 0;
  std::string first_message;  // of the earliest failure with this code
  absl::Time first_at = absl::InfiniteFuture();
};

// One worker's record, or several merged.
struct LoadTally {
  int64_t requests = 0;  // finished, ok or not
  int64_t ok_requests = 0;
  int64_t ok_matrices = 0;
  std::vector<absl::Duration> ok_latencies;  // of the ok requests, in no particular order
  std::map<absl::StatusCode, LoadErrors> errors;

  // Counts one finished request carrying `matrices` matrices, which took `latency` and ended
  // with `status` at `finished_at`.
  void Record(const absl::Status& status, int64_t matrices, absl::Duration latency,
              absl::Time finished_at);
  // Adds `other`'s counts and latencies; keeps the earlier first message of each code.
  void Merge(const LoadTally& other);
};

// The q-quantile of `sorted` by nearest rank: the smallest sample with at least ceil(q * N)
// samples at or below it. REQUIRES: `sorted` ascending and not empty, 0 < q <= 1.
absl::Duration NearestRankPercentile(absl::Span<const absl::Duration> sorted, double q);

struct LoadReport {
  LoadOptions options;
  LoadTally tally;
  absl::Duration wall;            // from the first request's start to the last one's end
  int64_t distinct_requests = 0;  // how many different requests were cycled through
};

// The table matrixctl prints, one "name  value" line each (so scripts can pick a line by its
// first word): requests, ok, failed, matrices, wall_s, requests/s, matrices/s (ok matrices),
// p50_ms, p90_ms, p99_ms (of ok requests; "-" when none), then one "error CODE count first:
// message" line per failing code.
std::string FormatLoadReport(const LoadReport& report);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_LOAD_REPORT_H_
