// Backend::Supports, the capability query asked before a job is queued: the operation's contract
// (dtypes, modulus, batch, shapes) is INVALID_ARGUMENT on every backend, and each backend's own
// limits (largest permanent, 32-bit library dimensions, batch counts) are UNIMPLEMENTED naming it.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr uint64_t kLargestPrime = (uint64_t{1} << 62) - 57;

// The largest permanent order of each backend, as its kernels are built (cuda::kMaxPermanentOrder
// and cpu::kMaxPermanentOrder).
int LargestPermanent(const std::string& backend) { return backend == "cuda" ? 48 : 62; }

OperationQuery Square(Operation operation, DType dtype, int64_t n) {
  return {.operation = operation, .dtype = dtype, .rows = n, .cols = n};
}

OperationQuery Product(DType dtype, int64_t m, int64_t k, int64_t n) {
  return {.operation = Operation::kMultiply,
          .dtype = dtype,
          .rows = m,
          .cols = k,
          .second_rows = k,
          .second_cols = n};
}

class SupportsTest : public BackendTest {
 protected:
  absl::Status Ask(const OperationQuery& query) { return backend().Supports(query); }
};

TEST_P(SupportsTest, PermanentsUpToTheBackendsLargestOrderAreSupported) {
  const int n = LargestPermanent(GetParam());
  EXPECT_TRUE(Ask(Square(Operation::kPermanent, DType::kFloat64, n)).ok());
}

TEST_P(SupportsTest, PermanentOneOrderLargerIsUnimplementedNamingTheLimit) {
  const int n = LargestPermanent(GetParam()) + 1;
  const absl::Status status = Ask(Square(Operation::kPermanent, DType::kComplex128, n));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(),
              HasSubstr("up to n = " + std::to_string(LargestPermanent(GetParam()))));
  EXPECT_THAT(status.message(), HasSubstr(GetParam()));
}

TEST_P(SupportsTest, EveryDTypeEachOperationTakesIsSupported) {
  for (const DType dtype :
       {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128}) {
    for (const Operation operation :
         {Operation::kDeterminant, Operation::kFactorize, Operation::kPermanent}) {
      EXPECT_TRUE(Ask(Square(operation, dtype, 20)).ok()) << DTypeName(dtype);
    }
    EXPECT_TRUE(Ask(Product(dtype, 30, 20, 10)).ok()) << DTypeName(dtype);
  }
  EXPECT_TRUE(Ask(Square(Operation::kDeterminant, DType::kInt64, 20)).ok());
  EXPECT_TRUE(Ask(Square(Operation::kPermanent, DType::kInt64, 20)).ok());
  EXPECT_TRUE(Ask(Product(DType::kUInt32, 30, 20, 10)).ok());
}

TEST_P(SupportsTest, DeterminantOfUint32IsInvalidNamingTheDType) {
  const absl::Status status = Ask(Square(Operation::kDeterminant, DType::kUInt32, 4));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("matrix.dtype is uint32"));
}

TEST_P(SupportsTest, ModularDeterminantOfTheLargestPrimeIsSupported) {
  OperationQuery query = Square(Operation::kDeterminant, DType::kInt64, 100);
  query.determinant.modulus = kLargestPrime;
  EXPECT_TRUE(Ask(query).ok());
}

TEST_P(SupportsTest, ModularDeterminantWantsInt64) {
  OperationQuery query = Square(Operation::kDeterminant, DType::kFloat64, 4);
  query.determinant.modulus = 7;
  const absl::Status status = Ask(query);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("int64 when modulus > 0"));
}

TEST_P(SupportsTest, ModulusThatIsNoPrimeBelowTwoToThe62IsInvalid) {
  for (const uint64_t modulus : {uint64_t{1}, uint64_t{4}, uint64_t{1} << 62, kLargestPrime + 2}) {
    OperationQuery query = Square(Operation::kDeterminant, DType::kInt64, 4);
    query.determinant.modulus = modulus;
    const absl::Status status = Ask(query);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << modulus;
    EXPECT_THAT(status.message(), HasSubstr("modulus " + std::to_string(modulus)));
  }
}

TEST_P(SupportsTest, FactorizationOfIntegersIsInvalid) {
  for (const DType dtype : {DType::kInt64, DType::kUInt32}) {
    const absl::Status status = Ask(Square(Operation::kFactorize, dtype, 4));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << DTypeName(dtype);
    EXPECT_THAT(status.message(), HasSubstr("want float32, float64, complex64 or complex128"));
  }
}

TEST_P(SupportsTest, ProductOfInt64IsInvalidNamingA) {
  const absl::Status status = Ask(Product(DType::kInt64, 2, 2, 2));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("a.dtype is int64"));
}

TEST_P(SupportsTest, PermanentOfUint32IsInvalid) {
  EXPECT_EQ(Ask(Square(Operation::kPermanent, DType::kUInt32, 3)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(SupportsTest, EmptyOperandIsInvalidNamingIt) {
  const absl::Status a = Ask(Square(Operation::kDeterminant, DType::kFloat64, 0));
  EXPECT_EQ(a.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.message(), HasSubstr("matrix has shape 0x0"));
  const absl::Status b = Ask(Product(DType::kFloat64, 2, 3, 0));
  EXPECT_EQ(b.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(b.message(), HasSubstr("b has shape 3x0"));
}

TEST_P(SupportsTest, BatchThatDoesNotDivideTheRowsIsInvalid) {
  OperationQuery query{.operation = Operation::kFactorize, .rows = 10, .cols = 3};
  query.factorize.batch_count = 3;
  const absl::Status status = Ask(query);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not a multiple of batch_count = 3"));
  query.factorize.batch_count = -1;
  EXPECT_EQ(Ask(query).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(SupportsTest, NegativeBlockSizeIsInvalid) {
  OperationQuery query = Product(DType::kFloat32, 4, 4, 4);
  query.multiply.block_size = -2;
  EXPECT_EQ(Ask(query).code(), absl::StatusCode::kInvalidArgument);
}

// Both backends pass 32-bit dimensions to their libraries (LAPACKE/CBLAS, cuBLAS/cuSOLVER).
TEST_P(SupportsTest, DimensionsUpToTwoToThe31MinusOneAreSupported) {
  EXPECT_TRUE(Ask(Product(DType::kFloat32, 1, kIntMax, 1)).ok());
  EXPECT_TRUE(Ask({.operation = Operation::kFactorize, .rows = kIntMax, .cols = 1}).ok());
}

TEST_P(SupportsTest, ProductDimensionBeyondTwoToThe31IsUnimplementedNamingTheOperand) {
  const absl::Status status = Ask(Product(DType::kFloat32, 1, 1, kIntMax + 1));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("b has shape 1x" + std::to_string(kIntMax + 1)));
  EXPECT_THAT(status.message(), HasSubstr(GetParam()));
}

TEST_P(SupportsTest, RightHandSideBeyondTwoToThe31ColumnsIsUnimplemented) {
  const OperationQuery query{.operation = Operation::kFactorize,
                             .rows = 4,
                             .cols = 4,
                             .second_rows = 4,
                             .second_cols = kIntMax + 1};
  const absl::Status status = Ask(query);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("rhs has shape"));
}

// The rows of a batch are its matrices stacked: only each matrix's rows count.
TEST_P(SupportsTest, BatchIsMeasuredMatrixByMatrix) {
  OperationQuery query{.operation = Operation::kFactorize, .rows = 2 * kIntMax, .cols = 1};
  EXPECT_EQ(Ask(query).code(), absl::StatusCode::kUnimplemented);
  query.factorize.batch_count = 2;
  EXPECT_TRUE(Ask(query).ok());
}

// cuBLAS/cuSOLVER take the batch count as an int; the CPU loops over any number of matrices.
TEST_P(SupportsTest, BatchCountBeyondTwoToThe31IsUnimplementedOnCudaOnly) {
  OperationQuery query{.operation = Operation::kFactorize, .rows = kIntMax + 1, .cols = 1};
  query.factorize.batch_count = kIntMax + 1;
  const absl::Status status = Ask(query);
  if (GetParam() == "cuda") {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(status.message(), HasSubstr("batch_count is " + std::to_string(kIntMax + 1)));
  } else {
    EXPECT_TRUE(status.ok()) << status;
  }
}

// What Supports refuses the backend itself refuses: the permanent one order above the limit.
TEST_P(SupportsTest, BackendRefusesThePermanentSupportsRefuses) {
  const int n = LargestPermanent(GetParam()) + 1;
  const Matrix a = Matrix::FromValues<double>(n, n, std::vector<double>(n * n, 1.0));
  ASSERT_FALSE(backend().Supports(PermanentQuery(a.view(), {})).ok());
  EXPECT_FALSE(backend().Permanent(a.view(), {}, /*control=*/nullptr).ok());
}

TEST(OperationQueries, CarryTheCallsShapesAndOptions) {
  const Matrix a(6, 4, DType::kComplex64);
  const Matrix b(4, 3, DType::kComplex64);
  const OperationQuery product = MultiplyQuery(a.view(), b.view(), {.block_size = 2});
  EXPECT_EQ(product.operation, Operation::kMultiply);
  EXPECT_EQ(product.dtype, DType::kComplex64);
  EXPECT_EQ(product.rows, 6);
  EXPECT_EQ(product.cols, 4);
  EXPECT_EQ(product.second_rows, 4);
  EXPECT_EQ(product.second_cols, 3);
  EXPECT_EQ(product.multiply.block_size, 2);

  const OperationQuery lu = FactorizeQuery(a.view(), {.batch_count = 3}, /*rhs=*/nullptr);
  EXPECT_EQ(lu.operation, Operation::kFactorize);
  EXPECT_EQ(lu.factorize.batch_count, 3);
  EXPECT_EQ(lu.second_rows, 0);
  EXPECT_EQ(lu.second_cols, 0);

  const OperationQuery det = DeterminantQuery(a.view(), {.modulus = 7});
  EXPECT_EQ(det.operation, Operation::kDeterminant);
  EXPECT_EQ(det.determinant.modulus, 7u);

  const OperationQuery per = PermanentQuery(a.view(), {.method = PermanentMethod::kRyser});
  EXPECT_EQ(per.operation, Operation::kPermanent);
  EXPECT_EQ(per.permanent.method, PermanentMethod::kRyser);
}

// devices > 1 takes LU or Cholesky of one square float32, float64, complex64 or complex128 matrix;
// the rest is the contract's INVALID_ARGUMENT on every backend, naming the field
// (core/validation.h CheckFactorizeDevices).
TEST_P(SupportsTest, FactorizeOverSeveralDevicesRefusesWhatItDoesNotTakeNamingTheField) {
  OperationQuery query = Square(Operation::kFactorize, DType::kFloat64, 8);
  query.factorize.devices = 0;
  EXPECT_THAT(Ask(query).message(), HasSubstr("devices is 0"));
  query.factorize.devices = 2;
  query.factorize.kind = FactorizationKind::kQr;
  EXPECT_EQ(Ask(query).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Ask(query).message(), HasSubstr("kind is QR with devices = 2"));
  query.factorize.kind = FactorizationKind::kLu;
  query.factorize.batch_count = 2;
  EXPECT_THAT(Ask(query).message(), HasSubstr("batch_count is 2 with devices = 2"));
  query.factorize.batch_count = 0;
  query.factorize.estimate_condition = true;
  EXPECT_THAT(Ask(query).message(), HasSubstr("estimate_condition is set with devices = 2"));
  query.factorize.estimate_condition = false;
  query.dtype = DType::kInt64;
  EXPECT_THAT(Ask(query).message(), HasSubstr("matrix.dtype is int64"));
  query.dtype = DType::kFloat64;
  query.cols = 4;
  EXPECT_THAT(Ask(query).message(), HasSubstr("matrix is 8x4 with devices = 2"));
}

// Every dtype the single-device Factorize takes passes the checks for several devices; whether
// the backend has the GPUs is its own answer, never a refusal naming matrix.dtype.
TEST(FactorizeDevices, EveryFloatingDTypePassesTheChecksForSeveralDevices) {
  for (const DType dtype :
       {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128}) {
    SCOPED_TRACE(DTypeName(dtype));
    for (const FactorizationKind kind : {FactorizationKind::kLu, FactorizationKind::kCholesky}) {
      EXPECT_TRUE(CheckFactorizeDevices({.kind = kind, .devices = 2}, dtype, 8, 8).ok());
    }
    // What the path does not take is still refused, naming the field.
    const absl::Status qr =
        CheckFactorizeDevices({.kind = FactorizationKind::kQr, .devices = 2}, dtype, 8, 8);
    EXPECT_EQ(qr.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(qr.message(), HasSubstr("kind is QR with devices = 2"));
    const absl::Status batch = CheckFactorizeDevices(
        {.kind = FactorizationKind::kLu, .batch_count = 2, .devices = 2}, dtype, 16, 8);
    EXPECT_THAT(batch.message(), HasSubstr("batch_count is 2 with devices = 2"));
  }
  const absl::Status integers =
      CheckFactorizeDevices({.kind = FactorizationKind::kLu, .devices = 2}, DType::kInt64, 8, 8);
  EXPECT_EQ(integers.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(integers.message(), HasSubstr("matrix.dtype is int64 with devices = 2"));
}

TEST(FactorizeDevices, TheCpuBackendRefusesSeveralDevicesNamingDevices) {
  auto backend = MakeBackend("cpu", {});
  ASSERT_TRUE(backend.ok()) << backend.status();
  OperationQuery query = Square(Operation::kFactorize, DType::kFloat64, 8);
  query.factorize.kind = FactorizationKind::kCholesky;
  query.factorize.devices = 2;
  const absl::Status status = (*backend)->Supports(query);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("devices is 2: one factorization over several GPUs"));
  EXPECT_THAT(status.message(), HasSubstr("cpu backend"));
  query.factorize.devices = 1;
  EXPECT_TRUE((*backend)->Supports(query).ok());
  // A complex64 LU over several devices passes validation too and meets the same answer.
  query.dtype = DType::kComplex64;
  query.factorize.kind = FactorizationKind::kLu;
  query.factorize.devices = 2;
  EXPECT_THAT((*backend)->Supports(query).message(),
              HasSubstr("devices is 2: one factorization over several GPUs"));
}

// A permanent split over several devices takes every dtype one device takes (float32, float64,
// complex64, complex128, int64): only the device count is a backend limit.
TEST(PermanentDevices, EveryDtypeOfOneDeviceSplitsOverSeveral) {
  const BackendLimits limits{
      .backend = "cuda", .max_permanent_order = 48, .max_permanent_devices = 2};
  for (const DType dtype :
       {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128, DType::kInt64}) {
    OperationQuery query = Square(Operation::kPermanent, dtype, 20);
    query.permanent.devices = 2;
    EXPECT_TRUE(CheckBackendLimits(query, limits).ok()) << DTypeName(dtype);
    query.permanent.devices = 3;
    const absl::Status too_many = CheckBackendLimits(query, limits);
    EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument) << DTypeName(dtype);
    EXPECT_THAT(std::string(too_many.message()), HasSubstr("devices is 3"));
  }
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(SupportsTest);

}  // namespace
}  // namespace matrixd::testing
