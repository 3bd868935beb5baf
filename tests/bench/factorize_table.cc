// LU, Cholesky and QR through a backend (no library-only column yet).
#include <cstdio>
#include <string>

#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"

namespace matrixd::bench {

void BenchFactorize(Backend& backend, int n, int repeats) {
  PrintHeader("Factorize on " + std::string(backend.name()) + ", float64, n = " + std::to_string(n),
              "kind       ours(s)   wall(s)   GFLOP/s (our count)");
  const Matrix general = RandomMatrix(n, n, DType::kFloat64, 3);
  const Matrix spd = SpdMatrix(n, 4);
  struct Case {
    const char* name;
    FactorizationKind kind;
    const Matrix* a;
  };
  for (const Case& c : {Case{"LU", FactorizationKind::kLu, &general},
                        Case{"Cholesky", FactorizationKind::kCholesky, &spd},
                        Case{"QR", FactorizationKind::kQr, &general}}) {
    double flops = 0;
    const Timing t = TimeOperation(repeats, [&] {
      auto result = backend.Factorize(c.a->view(), {.kind = c.kind}, nullptr, nullptr);
      if (result.ok()) flops = result->stats.flops;
      return result;
    });
    std::printf("%-10s %-9s %-9s %s\n", c.name, Seconds(t.seconds).c_str(), Seconds(t.wall).c_str(),
                Rate(flops, t.seconds, 1e9).c_str());
    if (!t.error.empty()) std::printf("  failed: %s\n", t.error.c_str());
  }
}

}  // namespace matrixd::bench
