#include "tests/bench/ntl_determinant.h"

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/modular_arithmetic.h"

#ifdef MATRIXD_HAVE_NTL
#include <NTL/BasicThreadPool.h>
#include <NTL/lzz_p.h>
#include <NTL/mat_lzz_p.h>
#include <NTL/version.h>
#endif

namespace matrixd::bench {

#ifdef MATRIXD_HAVE_NTL

namespace {

// NTL runs its matrix code on its thread pool when it has one; one thread makes it a one-core
// reference.
void UseOneThread() {
#ifdef NTL_THREAD_BOOST
  NTL::SetNumThreads(1);
#endif
}

}  // namespace

bool NtlAvailable() { return true; }

std::string NtlDescription() {
  UseOneThread();
#ifdef NTL_THREAD_BOOST
  const long threads = NTL::AvailableThreads();
#else
  const long threads = 1;
#endif
  return absl::StrCat("NTL ", NTL_VERSION, ", threads: ", threads);
}

absl::StatusOr<NtlDeterminant> NtlDeterminantModP(const MatrixView& a, uint64_t p) {
  if (a.dtype != DType::kInt64 || a.rows != a.cols || a.rows < 1 || p < 2 ||
      p >= (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat("NTL determinant of a ", a.rows, "x", a.cols,
                                                   " ", DTypeName(a.dtype), " matrix mod ", p,
                                                   "; want square int64 and 2 <= p < 2^31"));
  }
  try {
    UseOneThread();
    NTL::zz_p::init(static_cast<long>(p));
    const long n = static_cast<long>(a.rows);
    NTL::mat_zz_p m;
    m.SetDims(n, n);
    const int64_t* entries = a.As<int64_t>().data();
    for (long i = 0; i < n; ++i) {
      for (long j = 0; j < n; ++j) {
        m[i][j] = NTL::to_zz_p(static_cast<long>(ReduceSigned(entries[i * n + j], p)));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const NTL::zz_p det = NTL::determinant(m);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return NtlDeterminant{static_cast<uint64_t>(NTL::rep(det)), seconds};
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("NTL determinant mod ", p, ": ", e.what()));
  }
}

#else  // !MATRIXD_HAVE_NTL

bool NtlAvailable() { return false; }

std::string NtlDescription() { return "NTL not found when this build was configured"; }

absl::StatusOr<NtlDeterminant> NtlDeterminantModP(const MatrixView&, uint64_t) {
  return absl::UnavailableError(
      "this build has no NTL (install libntl-dev and configure again: CMake looks for "
      "NTL/mat_lzz_p.h and libntl)");
}

#endif  // MATRIXD_HAVE_NTL

}  // namespace matrixd::bench
