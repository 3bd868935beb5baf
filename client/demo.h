// `matrixctl demo`: the tour of the README — every operation on a few well-chosen matrices, each
// answer checked against a client-side reference or a known value.
#ifndef MATRIXD_CLIENT_DEMO_H_
#define MATRIXD_CLIENT_DEMO_H_

#include <cstdint>
#include <ostream>

#include "absl/status/status.h"
#include "client/client.h"

namespace matrixd {

// Runs every step, printing results, timings and checks to `out`. OK when every RPC succeeded
// and every checked value was right; otherwise the first failure's code, with a message naming
// the failed steps. `seed` picks the random matrices.
absl::Status RunDemo(Client& client, std::ostream& out, uint64_t seed);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_DEMO_H_
