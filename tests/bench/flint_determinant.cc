#include "tests/bench/flint_determinant.h"

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifdef MATRIXD_HAVE_FLINT
#include <flint/flint.h>
#include <flint/fmpz.h>
#include <flint/fmpz_mat.h>
#endif

namespace matrixd::bench {

#ifdef MATRIXD_HAVE_FLINT

bool FlintAvailable() { return true; }

std::string FlintDescription() {
  flint_set_num_threads(1);
  return absl::StrCat("FLINT ", FLINT_VERSION, ", threads: ", flint_get_num_threads());
}

absl::StatusOr<FlintDeterminant> FlintExactDeterminant(const MatrixView& a) {
  if (a.dtype != DType::kInt64 || a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("FLINT determinant of a ", a.rows, "x", a.cols,
                                                   " ", DTypeName(a.dtype),
                                                   " matrix; want square int64"));
  }
  flint_set_num_threads(1);
  const slong n = static_cast<slong>(a.rows);
  fmpz_mat_t m;
  fmpz_mat_init(m, n, n);
  const int64_t* entries = a.As<int64_t>().data();
  for (slong i = 0; i < n; ++i) {
    for (slong j = 0; j < n; ++j) {
      fmpz_set_si(fmpz_mat_entry(m, i, j), static_cast<slong>(entries[i * n + j]));
    }
  }
  fmpz_t det;
  fmpz_init(det);
  const auto start = std::chrono::steady_clock::now();
  fmpz_mat_det(det, m);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char* text = fmpz_get_str(nullptr, 10, det);
  FlintDeterminant result{std::string(text), seconds};
  flint_free(text);
  fmpz_clear(det);
  fmpz_mat_clear(m);
  return result;
}

#else  // !MATRIXD_HAVE_FLINT

bool FlintAvailable() { return false; }

std::string FlintDescription() { return "FLINT not built in"; }

absl::StatusOr<FlintDeterminant> FlintExactDeterminant(const MatrixView&) {
  return absl::UnavailableError(
      "FLINT not built in (install libflint-dev and configure again: CMake looks for "
      "flint/fmpz_mat.h and libflint)");
}

#endif  // MATRIXD_HAVE_FLINT

}  // namespace matrixd::bench
