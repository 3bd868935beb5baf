// The soak test's requests and their checks: random small problems of the four operations whose
// answers are computed again here, independently of the server (client/reference_math.h, long
// double or exact integer arithmetic), so that every successful result can be compared.
#ifndef MATRIXD_TESTS_SOAK_CHECKED_REQUESTS_H_
#define MATRIXD_TESTS_SOAK_CHECKED_REQUESTS_H_

#include <cstdint>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd::soak {

enum class SoakOp { kDeterminant, kFactorize, kMultiply, kPermanent };
inline constexpr SoakOp kSoakOps[] = {SoakOp::kDeterminant, SoakOp::kFactorize, SoakOp::kMultiply,
                                      SoakOp::kPermanent};
absl::string_view SoakOpName(SoakOp op);

struct SoakSizes {
  int64_t max_n = 64;            // determinants, factorizations, each dimension of a product
  int64_t max_permanent_n = 12;  // permanents
};

// One random request of `op` (sizes uniform in [1, max]), drawn from `rng`:
// - determinant: FLOAT64, a random matrix shifted by 2 sqrt(n) I (condition number below ~5)
//   with its rows permuted and one negated at random, or INT64 with entries in [-9, 9] (exact);
// - factorize: LU of such a FLOAT64 matrix with a right-hand side of 1 to 4 columns;
// - multiply: FLOAT64 m x k times k x n with random transposes, or UINT32 (exact mod 2^32);
// - permanent: FLOAT64 entries in [-1, 1), or INT64 in [-9, 9] (exact).
v1::JobRequest MakeCheckedRequest(SoakOp op, const SoakSizes& sizes, std::mt19937_64& rng);

// OK when `result`, a succeeded job's update (or a synchronous response in one, as
// CallJobRequest returns it), answers `request` (one of MakeCheckedRequest's): exact results
// exactly, FLOAT64 ones within a stated bound of the reference (determinant: log|det| within
// 1e-9 and the same sign; LU: reconstruction and solve residual below 1e-11; product: each entry
// within k^2 1e-15; permanent: within 1e-12 per(|A|)). INTERNAL naming the first wrong value
// otherwise.
absl::Status CheckJobResult(const v1::JobRequest& request, const v1::JobUpdate& result);

// OK when X solves A X = B (all FLOAT64, A n x n) with relative residual ||A X - B|| / ||B||
// below 1e-11; INTERNAL saying how far off otherwise.
absl::Status CheckSolution(const v1::Matrix& a, const v1::Matrix& b, const v1::Matrix& x);

}  // namespace matrixd::soak

#endif  // MATRIXD_TESTS_SOAK_CHECKED_REQUESTS_H_
