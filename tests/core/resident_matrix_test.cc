// Resident matrices on every backend: bytes written in pieces read back bit for bit, spill and
// restore keep them, and an operation on a resident matrix's view gives the same answer as on
// the host bytes (CUDA: the device view, for the operations that read operands on the device).
#include "core/resident_matrix.h"

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/hermitian_check.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

using ::matrixd::testing::BackendTest;

Matrix RandomMatrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(static_cast<size_t>(rows * cols));
  for (double& v : values) v = uniform(random);
  return Matrix::FromValues<double>(rows, cols, values);
}

std::unique_ptr<ResidentMatrix> Resident(Backend& backend, const Matrix& m, size_t piece) {
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
      backend.AllocateResident(m.rows(), m.cols(), m.dtype(), JobControl::kAnyDevice);
  EXPECT_TRUE(resident.ok()) << resident.status();
  if (!resident.ok()) return nullptr;
  for (size_t at = 0; at < m.byte_size(); at += piece) {
    const size_t size = std::min(piece, m.byte_size() - at);
    EXPECT_TRUE((*resident)->Write(at, {m.bytes() + at, size}).ok());
  }
  EXPECT_TRUE((*resident)->Flush().ok());
  return *std::move(resident);
}

Matrix ReadBack(const ResidentMatrix& resident) {
  Matrix m(resident.rows(), resident.cols(), resident.dtype());
  EXPECT_TRUE(resident.Read(0, {m.mutable_bytes(), m.byte_size()}).ok());
  return m;
}

bool SameBytes(const Matrix& a, const Matrix& b) {
  return a.byte_size() == b.byte_size() && std::memcmp(a.bytes(), b.bytes(), a.byte_size()) == 0;
}

// The backend's determinants, with `options`, of a resident matrix's `view` (which it must read
// where it lies when that is the device) and of the host matrix `m`; nullopt, with the failure
// recorded, when either call fails.
struct TwoDeterminants {
  DeterminantResult on_resident;
  DeterminantResult on_host;
};
std::optional<TwoDeterminants> OnResidentAndHost(Backend& backend, const MatrixView& view,
                                                 const Matrix& m,
                                                 const DeterminantOptions& options) {
  if (view.on_device()) {
    EXPECT_TRUE(backend.DeterminantReadsOnDevice(view, options));
  }
  absl::StatusOr<DeterminantResult> on_resident = backend.Determinant(view, options, nullptr);
  absl::StatusOr<DeterminantResult> on_host = backend.Determinant(m.view(), options, nullptr);
  EXPECT_TRUE(on_resident.ok()) << on_resident.status();
  EXPECT_TRUE(on_host.ok()) << on_host.status();
  if (!on_resident.ok() || !on_host.ok()) return std::nullopt;
  return TwoDeterminants{*std::move(on_resident), *std::move(on_host)};
}

using ResidentMatrixTest = BackendTest;

TEST_P(ResidentMatrixTest, WrittenInOddPiecesReadsBackBitForBit) {
  const Matrix m = RandomMatrix(37, 29, 1);
  for (const size_t piece : {size_t{3}, size_t{1000}, m.byte_size()}) {
    std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, piece);
    ASSERT_NE(resident, nullptr);
    EXPECT_TRUE(SameBytes(ReadBack(*resident), m)) << "pieces of " << piece;
    Matrix middle(1, 5, DType::kFloat64);
    ASSERT_TRUE(resident->Read(8 * 100, {middle.mutable_bytes(), middle.byte_size()}).ok());
    EXPECT_EQ(middle.As<double>()[0], m.As<double>()[100]);
  }
}

TEST_P(ResidentMatrixTest, RangesOutsideTheMatrixAreRefused) {
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), RandomMatrix(4, 4, 2), 128);
  ASSERT_NE(resident, nullptr);
  std::vector<std::byte> bytes(16);
  EXPECT_EQ(resident->Write(120, bytes).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(resident->Read(128, std::span<std::byte>(bytes).first(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(ResidentMatrixTest, SpillAndRestoreKeepTheBytes) {
  const Matrix m = RandomMatrix(64, 48, 3);
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, m.byte_size());
  ASSERT_NE(resident, nullptr);
  const uint64_t on_device = resident->device_bytes();
  ASSERT_TRUE(resident->Spill().ok());
  EXPECT_EQ(resident->device_bytes(), 0u);
  EXPECT_EQ(resident->spilled(), on_device > 0);  // the CPU backend has nothing to spill
  EXPECT_TRUE(SameBytes(ReadBack(*resident), m));
  ASSERT_TRUE(resident->Restore().ok());
  EXPECT_FALSE(resident->spilled());
  EXPECT_EQ(resident->device_bytes(), on_device);
  EXPECT_TRUE(SameBytes(ReadBack(*resident), m));
}

TEST_P(ResidentMatrixTest, DeterminantOfTheResidentViewEqualsTheHostOne) {
  const Matrix m = RandomMatrix(200, 200, 4);
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, 4096);
  ASSERT_NE(resident, nullptr);
  const MatrixView view = resident->view();
  EXPECT_EQ(view.on_device(), backend().name() == "cuda");
  const std::optional<TwoDeterminants> both = OnResidentAndHost(backend(), view, m, {});
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->on_resident.value.log_abs(), both->on_host.value.log_abs());
  EXPECT_EQ(both->on_resident.value.phase(), both->on_host.value.phase());
}

TEST_P(ResidentMatrixTest, ModularDeterminantOfAResidentInt64ViewEqualsTheHostOne) {
  // n = 300 with entries up to 10^9, so that the residues are far from trivial; primes below
  // 2^16, below 2^31 (the balanced-residue LU), and above 2^32 (the uint64 elimination).
  const int64_t n = 300;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> entry(-1000000000, 1000000000);
  std::vector<int64_t> values(static_cast<size_t>(n * n));
  for (int64_t& v : values) v = entry(rng);
  const Matrix m = Matrix::FromValues<int64_t>(n, n, values);
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, 1 << 16);
  ASSERT_NE(resident, nullptr);
  const MatrixView view = resident->view();
  for (const uint64_t p : {uint64_t{65521}, uint64_t{2147483629}, uint64_t{4294967311}}) {
    for (const DeterminantMethod method :
         {DeterminantMethod::kAuto, DeterminantMethod::kCondensation}) {
      SCOPED_TRACE(::testing::Message() << "p = " << p << " method " << static_cast<int>(method));
      const std::optional<TwoDeterminants> both =
          OnResidentAndHost(backend(), view, m, {.method = method, .modulus = p});
      ASSERT_TRUE(both.has_value());
      EXPECT_EQ(both->on_resident.residue, both->on_host.residue);
      EXPECT_GT(both->on_host.residue, 0u);
    }
  }
  // The exact integer determinant still reads a host copy.
  EXPECT_FALSE(backend().DeterminantReadsOnDevice(view, {}) && view.on_device());
}

TEST_P(ResidentMatrixTest, LuOfAResidentViewEqualsTheHostOneBitForBit) {
  // n = 200: above the CUDA backend's host path for small factorizations.
  const Matrix m = RandomMatrix(200, 200, 8);
  const Matrix rhs = RandomMatrix(200, 3, 9);
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, 1 << 12);
  ASSERT_NE(resident, nullptr);
  const MatrixView view = resident->view();
  const MatrixView rhs_view = rhs.view();
  const FactorizeOptions options{.estimate_condition = true};
  if (view.on_device()) {
    ASSERT_TRUE(backend().FactorizeReadsOnDevice(view, options, &rhs_view));
  }
  absl::StatusOr<FactorizeResult> on_resident =
      backend().Factorize(view, options, &rhs_view, nullptr);
  absl::StatusOr<FactorizeResult> on_host =
      backend().Factorize(m.view(), options, &rhs_view, nullptr);
  ASSERT_TRUE(on_resident.ok()) << on_resident.status();
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  EXPECT_TRUE(SameBytes(on_resident->lu, on_host->lu));
  ASSERT_TRUE(on_resident->solution.has_value() && on_host->solution.has_value());
  EXPECT_TRUE(SameBytes(*on_resident->solution, *on_host->solution));
  EXPECT_EQ(on_resident->permutation, on_host->permutation);
  ASSERT_TRUE(on_resident->accuracy.has_value() && on_host->accuracy.has_value());
  EXPECT_EQ(on_resident->accuracy->rcond, on_host->accuracy->rcond);
}

TEST_P(ResidentMatrixTest, CholeskyOfAResidentViewEqualsTheHostOneAndChecksItIsSymmetric) {
  // n = 150, symmetric positive definite (R + R^T + 2n I).
  const int64_t n = 150;
  Matrix m = RandomMatrix(n, n, 10);
  std::span<double> v = m.As<double>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) v[i * n + j] = v[j * n + i] = v[i * n + j] + v[j * n + i];
    v[i * n + i] += 2.0 * n;
  }
  std::unique_ptr<ResidentMatrix> resident = Resident(backend(), m, 1 << 12);
  ASSERT_NE(resident, nullptr);
  const FactorizeOptions options{.kind = FactorizationKind::kCholesky};
  if (resident->view().on_device()) {
    ASSERT_TRUE(backend().FactorizeReadsOnDevice(resident->view(), options, nullptr));
  }
  absl::StatusOr<FactorizeResult> on_resident =
      backend().Factorize(resident->view(), options, nullptr, nullptr);
  absl::StatusOr<FactorizeResult> on_host =
      backend().Factorize(m.view(), options, nullptr, nullptr);
  ASSERT_TRUE(on_resident.ok()) << on_resident.status();
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  EXPECT_TRUE(SameBytes(on_resident->l, on_host->l));

  // One entry below the diagonal changed by far more than rounding: a device operand is refused
  // by the backend itself, in the words of the host check (the server's validation).
  Matrix skewed = m;
  skewed.As<double>()[37 * n + 5] += 1.0;
  std::unique_ptr<ResidentMatrix> bad = Resident(backend(), skewed, 1 << 12);
  ASSERT_NE(bad, nullptr);
  if (bad->view().on_device()) {
    const absl::Status refused =
        backend().Factorize(bad->view(), options, nullptr, nullptr).status();
    EXPECT_EQ(refused, RequireHermitian(skewed.view(), 0, "matrix"));
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("[5][37]"), std::string::npos) << refused;
  }
}

// The backend's factorizations, with `options`, of `m` made resident (whose view it must read
// where it lies when that is the device) and of m's host bytes, both with `rhs` when given;
// nullopt, with the failure recorded, when any step fails.
struct TwoFactorizations {
  FactorizeResult on_resident;
  FactorizeResult on_host;
};
std::optional<TwoFactorizations> FactorizeResidentAndHost(Backend& backend, const Matrix& m,
                                                          const FactorizeOptions& options,
                                                          const Matrix* rhs) {
  std::unique_ptr<ResidentMatrix> resident = Resident(backend, m, 1 << 12);
  if (resident == nullptr) return std::nullopt;
  const MatrixView view = resident->view();
  const std::optional<MatrixView> rhs_view =
      rhs != nullptr ? std::optional<MatrixView>(rhs->view()) : std::nullopt;
  const MatrixView* rhs_pointer = rhs_view.has_value() ? &*rhs_view : nullptr;
  if (view.on_device()) {
    EXPECT_TRUE(backend.FactorizeReadsOnDevice(view, options, rhs_pointer));
  }
  absl::StatusOr<FactorizeResult> on_resident =
      backend.Factorize(view, options, rhs_pointer, nullptr);
  absl::StatusOr<FactorizeResult> on_host =
      backend.Factorize(m.view(), options, rhs_pointer, nullptr);
  EXPECT_TRUE(on_resident.ok()) << on_resident.status();
  EXPECT_TRUE(on_host.ok()) << on_host.status();
  if (!on_resident.ok() || !on_host.ok()) return std::nullopt;
  return TwoFactorizations{*std::move(on_resident), *std::move(on_host)};
}

TEST_P(ResidentMatrixTest, QrOfAResidentViewEqualsTheHostOneBitForBit) {
  // A least-squares solve of a tall 200 x 120 system, with the condition estimate.
  const Matrix rhs = RandomMatrix(200, 2, 13);
  const std::optional<TwoFactorizations> results =
      FactorizeResidentAndHost(backend(), RandomMatrix(200, 120, 12),
                               {.kind = FactorizationKind::kQr, .estimate_condition = true}, &rhs);
  ASSERT_TRUE(results.has_value());
  EXPECT_TRUE(SameBytes(results->on_resident.q, results->on_host.q));
  EXPECT_TRUE(SameBytes(results->on_resident.r, results->on_host.r));
  ASSERT_TRUE(results->on_resident.solution.has_value() && results->on_host.solution.has_value());
  EXPECT_TRUE(SameBytes(*results->on_resident.solution, *results->on_host.solution));
  ASSERT_TRUE(results->on_resident.accuracy.has_value() && results->on_host.accuracy.has_value());
  EXPECT_EQ(results->on_resident.accuracy->rcond, results->on_host.accuracy->rcond);
}

TEST_P(ResidentMatrixTest, BatchedLuOfAResidentViewEqualsTheHostOneBitForBit) {
  // Four 40 x 40 matrices stacked; the third has a zero row, so its exactly zero pivot sends it
  // to the host's LAPACK (on the CUDA backend, copied there from the device first).
  constexpr int64_t kOrder = 40;
  constexpr int64_t kCount = 4;
  Matrix m = RandomMatrix(kCount * kOrder, kOrder, 14);
  for (int64_t j = 0; j < kOrder; ++j) m.As<double>()[(2 * kOrder + 7) * kOrder + j] = 0.0;
  const std::optional<TwoFactorizations> results =
      FactorizeResidentAndHost(backend(), m, {.batch_count = kCount}, nullptr);
  ASSERT_TRUE(results.has_value());
  EXPECT_TRUE(SameBytes(results->on_resident.lu, results->on_host.lu));
  EXPECT_EQ(results->on_resident.permutation, results->on_host.permutation);
  EXPECT_EQ(results->on_resident.singular_columns, results->on_host.singular_columns);
  ASSERT_EQ(results->on_resident.singular_columns.size(), static_cast<size_t>(kCount));
  EXPECT_GE(results->on_resident.singular_columns[2], 0);

  // With right-hand sides (the batch without its singular member).
  const Matrix rhs = RandomMatrix(kCount * kOrder, 2, 16);
  const std::optional<TwoFactorizations> solved = FactorizeResidentAndHost(
      backend(), RandomMatrix(kCount * kOrder, kOrder, 15), {.batch_count = kCount}, &rhs);
  ASSERT_TRUE(solved.has_value());
  EXPECT_TRUE(SameBytes(solved->on_resident.lu, solved->on_host.lu));
  ASSERT_TRUE(solved->on_resident.solution.has_value() && solved->on_host.solution.has_value());
  EXPECT_TRUE(SameBytes(*solved->on_resident.solution, *solved->on_host.solution));
}

// `count` symmetric positive definite n x n matrices stacked (R + R^T + 2n I each).
Matrix SpdBatch(int64_t n, int64_t count, unsigned seed) {
  Matrix m = RandomMatrix(count * n, n, seed);
  std::span<double> v = m.As<double>();
  for (int64_t k = 0; k < count; ++k) {
    double* a = v.data() + k * n * n;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) a[i * n + j] = a[j * n + i] = a[i * n + j] + a[j * n + i];
      a[i * n + i] += 2.0 * static_cast<double>(n);
    }
  }
  return m;
}

TEST_P(ResidentMatrixTest, BatchedCholeskyOfAResidentViewEqualsTheHostOneAndChecksEachMember) {
  constexpr int64_t kOrder = 50;  // two tiles of the device check a side
  constexpr int64_t kCount = 3;
  const Matrix m = SpdBatch(kOrder, kCount, 19);
  const Matrix rhs = RandomMatrix(kCount * kOrder, 2, 20);
  const FactorizeOptions options{.kind = FactorizationKind::kCholesky, .batch_count = kCount};
  const std::optional<TwoFactorizations> results =
      FactorizeResidentAndHost(backend(), m, options, &rhs);
  ASSERT_TRUE(results.has_value());
  EXPECT_TRUE(SameBytes(results->on_resident.l, results->on_host.l));
  ASSERT_TRUE(results->on_resident.solution.has_value() && results->on_host.solution.has_value());
  EXPECT_TRUE(SameBytes(*results->on_resident.solution, *results->on_host.solution));

  // Member 2's entry [40][3] changed by far more than rounding: a device operand is refused by
  // the backend itself, in the words of the host check (the server's validation), naming member 2.
  Matrix skewed = m;
  skewed.As<double>()[2 * kOrder * kOrder + 40 * kOrder + 3] += 1.0;
  std::unique_ptr<ResidentMatrix> bad = Resident(backend(), skewed, 1 << 12);
  ASSERT_NE(bad, nullptr);
  if (bad->view().on_device()) {
    const absl::Status refused =
        backend().Factorize(bad->view(), options, nullptr, nullptr).status();
    EXPECT_EQ(refused, RequireHermitian(skewed.view(), kCount, "matrix"));
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("matrix 2 of the batch"), std::string::npos) << refused;
    EXPECT_NE(refused.message().find("[3][40]"), std::string::npos) << refused;
  }
}

TEST_P(ResidentMatrixTest, RefinedSolveOfAResidentViewEqualsTheHostOneBitForBit) {
  const Matrix rhs = RandomMatrix(150, 2, 18);
  const std::optional<TwoFactorizations> results = FactorizeResidentAndHost(
      backend(), RandomMatrix(150, 150, 17), {.refine = {.enabled = true}}, &rhs);
  ASSERT_TRUE(results.has_value());
  ASSERT_TRUE(results->on_resident.solution.has_value() && results->on_host.solution.has_value());
  EXPECT_TRUE(SameBytes(*results->on_resident.solution, *results->on_host.solution));
  ASSERT_TRUE(results->on_resident.refinement.has_value() &&
              results->on_host.refinement.has_value());
  EXPECT_EQ(results->on_resident.refinement->backward_error,
            results->on_host.refinement->backward_error);
  EXPECT_TRUE(results->on_resident.refinement->converged);
}

TEST_P(ResidentMatrixTest, ProductOfResidentViewsEqualsTheHostOne) {
  const Matrix a = RandomMatrix(120, 80, 5);
  const Matrix b = RandomMatrix(80, 60, 6);
  std::unique_ptr<ResidentMatrix> ra = Resident(backend(), a, 1 << 12);
  std::unique_ptr<ResidentMatrix> rb = Resident(backend(), b, 1 << 12);
  ASSERT_NE(ra, nullptr);
  ASSERT_NE(rb, nullptr);
  const MultiplyOptions options{.transpose_a = false};
  if (ra->view().on_device()) {
    ASSERT_TRUE(backend().MultiplyReadsOnDevice(ra->view(), rb->view(), options));
  }
  absl::StatusOr<MultiplyResult> on_resident =
      backend().Multiply(ra->view(), rb->view(), options, nullptr);
  absl::StatusOr<MultiplyResult> on_host = backend().Multiply(a.view(), b.view(), options, nullptr);
  ASSERT_TRUE(on_resident.ok()) << on_resident.status();
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  EXPECT_TRUE(SameBytes(on_resident->c, on_host->c));
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(ResidentMatrixTest);

}  // namespace
}  // namespace matrixd
