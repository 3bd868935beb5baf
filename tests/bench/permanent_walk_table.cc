// The permanent's dense and sparse walks on any backend (the CPU one with --no_gpu; the GPU has
// the `permanent` table with its floors): real Glynn on a perm_density-dense matrix with entries
// k / 2^20 at perm_n - 4, perm_n - 2 and perm_n, both precisions, each walk and AUTO's choice,
// the dense/sparse time ratio and the values, which must agree.
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/permanent_inputs.h"

namespace matrixd::bench {

void BenchPermanentWalks(Backend& backend, const std::string& label, const Flags& flags) {
  PrintHeader(
      absl::StrCat("Permanent walks on the ", label,
                   ", float64 Glynn: dense vs sparse walk on a sparse matrix"),
      "n    precision walk    used    seconds    dense/this  value",
      {absl::StrCat("matrices: entries k / 2^20, k uniform in [1, 2^20), each non-zero with "
                    "probability ",
                    Significant(flags.perm_density), " (bench seed 1900 + n, as the GPU table)"),
       "target (issue 13, on the H100 at n = 36): the sparse walk >= 1.5x faster than the "
       "dense one, same value"});
  constexpr PermanentWalk kWalks[] = {PermanentWalk::kDense, PermanentWalk::kSparse,
                                      PermanentWalk::kAuto};
  const auto walk_name = [](PermanentWalk walk) {
    return walk == PermanentWalk::kSparse  ? "sparse"
           : walk == PermanentWalk::kDense ? "dense"
                                           : "auto";
  };
  for (const int n : {flags.perm_n - 4, flags.perm_n - 2, flags.perm_n}) {
    if (n < 1) continue;
    const GridMatrix grid = RandomGridMatrix(n, false, flags.perm_density, 1900 + n);
    for (const PermanentPrecision precision :
         {PermanentPrecision::kExtended, PermanentPrecision::kFast}) {
      double dense_seconds = NAN;
      for (const PermanentWalk walk : kWalks) {
        PermanentOptions options;
        options.method = PermanentMethod::kGlynn;
        options.precision = precision;
        options.walk = walk;
        double value = NAN;
        PermanentWalk used = PermanentWalk::kAuto;
        const Timing timing = TimeOperation(flags.repeats, [&] {
          absl::StatusOr<PermanentResult> result =
              backend.Permanent(grid.values.view(), options, nullptr);
          if (result.ok()) {
            value = result->value.real();
            used = result->walk_used;
          }
          return result;
        });
        if (walk == PermanentWalk::kDense) dense_seconds = timing.seconds;
        std::printf("%-4d %-9s %-7s %-7s %-10s %-11s %.17g\n", n,
                    precision == PermanentPrecision::kFast ? "fast" : "extended", walk_name(walk),
                    walk_name(used), Seconds(timing.seconds).c_str(),
                    Ratio(dense_seconds, timing.seconds).c_str(), value);
        if (!timing.error.empty()) std::printf("  failed: %s\n", timing.error.c_str());
      }
    }
  }
}

}  // namespace matrixd::bench
