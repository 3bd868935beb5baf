// The soak test's clients: threads that send checked requests of every operation to one server in
// a random mix of ways (synchronous calls with a long or a very short deadline, Submit + Watch,
// Submit with a job timeout, Submit + Cancel, LU kept on the server + Solve), check every
// successful result, and one that drops Upload and Watch streams half way.
#ifndef MATRIXD_TESTS_SOAK_MIXED_LOAD_H_
#define MATRIXD_TESTS_SOAK_MIXED_LOAD_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "client/load_report.h"
#include "tests/soak/checked_requests.h"

namespace matrixd::soak {

// What the clients saw.
struct SoakTally {
  // Every request once, under its final status: the call's, or for a submitted job the job's
  // own (SUCCEEDED counts as OK). Dropped streams count as the CANCELLED their client chose.
  LoadTally calls;
  int64_t checked = 0;  // OK results compared with their reference
  int64_t wrong = 0;    // of those, how many were wrong
  std::string first_wrong;
  int64_t dropped_uploads = 0;
  int64_t dropped_watches = 0;
  std::map<std::string, int64_t> by_way;  // requests by "operation/way", e.g. "permanent/cancel"

  void Merge(const SoakTally& other);
};

struct MixedLoadOptions {
  std::string target;  // host:port
  int clients = 4;     // threads sending checked requests, each on its own connection
  SoakSizes sizes;
  uint64_t seed = 1;
};

// Runs options.clients threads and one stream-dropping thread until `until`, then returns their
// merged tallies.
SoakTally RunMixedLoad(const MixedLoadOptions& options, absl::Time until);

}  // namespace matrixd::soak

#endif  // MATRIXD_TESTS_SOAK_MIXED_LOAD_H_
