// The Solve RPC end to end on the CPU backend: Factorize keeps a factorization under one handle,
// Solve uses it (right-hand sides inline or by handle, transposes, residuals, X kept), and every
// bad reference, kind, shape and dtype is refused with the field named.
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "tests/server/random_values.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kN = 48;

// Random plus n at [i, i + 1 mod n]: well conditioned, and LU has to permute the rows.
v1::Matrix WellConditioned(int64_t n, uint64_t seed) {
  std::vector<double> values = RandomValues(n * n, seed);
  for (int64_t i = 0; i < n; ++i) values[i * n + (i + 1) % n] += static_cast<double>(n);
  return MakeMatrix<double>(n, n, values);
}

std::vector<double> Values(const v1::Matrix& m) {
  absl::StatusOr<std::vector<double>> values = ReadMatrix<double>(m);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<double>{};
}

// max |x - y| / max |y|.
double RelativeDistance(const std::vector<double>& x, const std::vector<double>& y) {
  EXPECT_EQ(x.size(), y.size());
  double distance = 0.0;
  double scale = 0.0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    distance = std::max(distance, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return distance / scale;
}

class SolveServerTest : public ServerTest {
 protected:
  void SetUp() override {
    stub_ = v1::MatrixService::NewStub(
        grpc::CreateChannel(server().address(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Call(const v1::SolveRequest& request, v1::SolveResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub_->Solve(&context, request, response);
  }

  // Factorize with keep_result (and keep_input); the response, checked OK.
  v1::FactorizeResponse Keep(const v1::Matrix& a, v1::FactorizationKind kind,
                             bool keep_input = true) {
    v1::FactorizeRequest request;
    *request.mutable_matrix() = a;
    request.set_kind(kind);
    request.mutable_result_options()->set_keep_result(true);
    request.set_keep_input(keep_input);
    absl::StatusOr<v1::FactorizeResponse> response = client().Factorize(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? *response : v1::FactorizeResponse();
  }

  static v1::SolveRequest Request(const std::string& handle, const v1::Matrix& rhs) {
    v1::SolveRequest request;
    request.mutable_factorization()->set_handle(handle);
    *request.mutable_rhs() = rhs;
    return request;
  }

  // The status of a Solve that must fail, with its message.
  grpc::Status Refused(const v1::SolveRequest& request) {
    v1::SolveResponse response;
    const grpc::Status status = Call(request, &response);
    EXPECT_FALSE(status.ok());
    return status;
  }

  void Release(const std::string& handle) {
    grpc::ClientContext context;
    v1::ReleaseRequest request;
    request.set_handle(handle);
    v1::ReleaseResponse response;
    EXPECT_TRUE(stub_->Release(&context, request, &response).ok());
  }

  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

TEST_F(SolveServerTest, KeptLuSolvedByHandleMatchesInlineLuSolve) {
  const v1::Matrix a = WellConditioned(kN, 1);
  const v1::Matrix b = MakeMatrix<double>(kN, 3, RandomValues(kN * 3, 2));
  const v1::FactorizeResponse kept = Keep(a, v1::FACTORIZATION_KIND_LU);
  ASSERT_TRUE(kept.kept().contains("factorization"));
  const std::string handle = kept.kept().at("factorization").handle();
  EXPECT_EQ(kept.kept().at("lu").handle(), handle);
  EXPECT_FALSE(kept.has_lu()) << "the kept factor is not sent inline too";

  v1::FactorizeRequest inline_request;
  *inline_request.mutable_matrix() = a;
  inline_request.set_kind(v1::FACTORIZATION_KIND_LU);
  *inline_request.mutable_rhs() = b;
  absl::StatusOr<v1::FactorizeResponse> inline_response = client().Factorize(inline_request);
  ASSERT_TRUE(inline_response.ok()) << inline_response.status();

  v1::SolveResponse response;
  const grpc::Status status = Call(Request(handle, b), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.kind(), v1::FACTORIZATION_KIND_LU);
  EXPECT_LE(RelativeDistance(Values(response.solution()), Values(inline_response->solution())),
            1e-13);
  EXPECT_EQ(response.stats().backend(), "cpu");
  EXPECT_DOUBLE_EQ(response.stats().flops(), 2.0 * kN * kN * 3);
  EXPECT_FALSE(response.has_residual());
  Release(handle);
}

TEST_F(SolveServerTest, ResidualIsReportedAndSmallAlsoForTransposes) {
  const v1::Matrix a = WellConditioned(kN, 3);
  const v1::Matrix b = MakeMatrix<double>(kN, 2, RandomValues(kN * 2, 4));
  const std::string handle = Keep(a, v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  for (const v1::SolveTranspose transpose :
       {v1::SOLVE_TRANSPOSE_NONE, v1::SOLVE_TRANSPOSE_TRANSPOSE, v1::SOLVE_TRANSPOSE_CONJUGATE}) {
    v1::SolveRequest request = Request(handle, b);
    request.set_transpose(transpose);
    request.set_residual(true);
    v1::SolveResponse response;
    const grpc::Status status = Call(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_TRUE(response.has_residual()) << transpose;
    EXPECT_LE(response.residual(), 1e-15) << transpose;
    EXPECT_GE(response.residual(), 0.0) << transpose;
  }
  Release(handle);
}

TEST_F(SolveServerTest, SolutionKeptAndUsedAsTheNextRightHandSide) {
  const v1::Matrix a = WellConditioned(kN, 5);
  const std::vector<double> b_values = RandomValues(kN, 6);
  const std::string handle = Keep(a, v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  v1::SolveRequest first = Request(handle, MakeMatrix<double>(kN, 1, b_values));
  first.mutable_result_options()->set_keep_result(true);
  v1::SolveResponse kept;
  ASSERT_TRUE(Call(first, &kept).ok());
  EXPECT_FALSE(kept.has_solution());
  ASSERT_TRUE(kept.kept().contains("solution"));
  const std::string x_handle = kept.kept().at("solution").handle();

  // A (A X) = b read the other way: X2 = A^-1 X = A^-2 b, the same as two inline solves.
  v1::SolveRequest second;
  second.mutable_factorization()->set_handle(handle);
  second.mutable_rhs_ref()->set_handle(x_handle);
  v1::SolveResponse by_handle;
  ASSERT_TRUE(Call(second, &by_handle).ok());

  v1::SolveResponse x_inline;
  ASSERT_TRUE(Call(Request(handle, MakeMatrix<double>(kN, 1, b_values)), &x_inline).ok());
  v1::SolveResponse twice_inline;
  ASSERT_TRUE(Call(Request(handle, x_inline.solution()), &twice_inline).ok());
  EXPECT_EQ(Values(by_handle.solution()), Values(twice_inline.solution()));

  // The kept X is a plain matrix: not a factorization.
  const grpc::Status status = Refused(Request(x_handle, MakeMatrix<double>(kN, 1, b_values)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("not a kept factorization"));
  Release(x_handle);
  Release(handle);
}

TEST_F(SolveServerTest, KeptCholeskyAndQrSolveAsTheirInlineSolves) {
  const v1::Matrix a = WellConditioned(kN, 7);
  // A^T A + I is positive definite.
  const std::vector<double> values = Values(a);
  std::vector<double> spd(static_cast<size_t>(kN * kN), 0.0);
  for (int64_t i = 0; i < kN; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double sum = i == j ? 1.0 : 0.0;
      for (int64_t p = 0; p < kN; ++p) sum += values[p * kN + i] * values[p * kN + j];
      spd[i * kN + j] = sum;
    }
  }
  const v1::Matrix b = MakeMatrix<double>(kN, 2, RandomValues(kN * 2, 8));
  for (const auto& [matrix, kind, factor] :
       {std::tuple{MakeMatrix<double>(kN, kN, spd), v1::FACTORIZATION_KIND_CHOLESKY, "l"},
        std::tuple{a, v1::FACTORIZATION_KIND_QR, "q"}}) {
    const v1::FactorizeResponse kept = Keep(matrix, kind);
    const std::string handle = kept.kept().at("factorization").handle();
    EXPECT_EQ(kept.kept().at(factor).handle(), handle);
    v1::FactorizeRequest inline_request;
    *inline_request.mutable_matrix() = matrix;
    inline_request.set_kind(kind);
    *inline_request.mutable_rhs() = b;
    absl::StatusOr<v1::FactorizeResponse> inline_response = client().Factorize(inline_request);
    ASSERT_TRUE(inline_response.ok()) << inline_response.status();
    v1::SolveResponse response;
    ASSERT_TRUE(Call(Request(handle, b), &response).ok());
    EXPECT_EQ(response.kind(), kind);
    EXPECT_LE(RelativeDistance(Values(response.solution()), Values(inline_response->solution())),
              1e-12);
    Release(handle);
    if (kept.kept().contains("r")) Release(kept.kept().at("r").handle());
  }
}

TEST_F(SolveServerTest, ListMatricesShowsTheFactorizationWithAllItsBytes) {
  const std::string handle =
      Keep(WellConditioned(kN, 9), v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  grpc::ClientContext context;
  v1::ListMatricesResponse list;
  ASSERT_TRUE(stub_->ListMatrices(&context, v1::ListMatricesRequest(), &list).ok());
  bool found = false;
  for (const v1::ResidentMatrix& m : list.matrices()) {
    if (m.handle() != handle) continue;
    found = true;
    EXPECT_EQ(m.factorization_kind(), v1::FACTORIZATION_KIND_LU);
    EXPECT_TRUE(m.input_kept());
    EXPECT_EQ(m.rows(), kN);
    EXPECT_EQ(m.label(), "lu");
    // Packed LU, the permutation and A.
    EXPECT_EQ(m.bytes(), uint64_t{kN * kN * 8 + kN * 8 + kN * kN * 8});
  }
  EXPECT_TRUE(found);
  Release(handle);
}

TEST_F(SolveServerTest, ReleasedOrUnknownHandlesAreNotFound) {
  const std::string handle =
      Keep(WellConditioned(kN, 10), v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  const v1::Matrix b = MakeMatrix<double>(kN, 1, RandomValues(kN, 11));
  Release(handle);
  grpc::Status status = Refused(Request(handle, b));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("factorization.handle"));
  status = Refused(Request(std::string(32, '0'), b));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::SolveRequest rhs_gone = Request(
      Keep(WellConditioned(kN, 12), v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle(),
      b);
  rhs_gone.mutable_rhs_ref()->set_handle(handle);
  status = Refused(rhs_gone);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("rhs_ref.handle"));
  Release(rhs_gone.factorization().handle());
  ExpectStillServing();
}

TEST_F(SolveServerTest, BadShapesDTypesKindsAndOptionsNameTheField) {
  const v1::Matrix a = WellConditioned(kN, 13);
  const std::string lu = Keep(a, v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  const std::string lu_without_a =
      Keep(a, v1::FACTORIZATION_KIND_LU, /*keep_input=*/false).kept().at("factorization").handle();
  const v1::Matrix b = MakeMatrix<double>(kN, 1, RandomValues(kN, 14));
  const auto expect = [&](const v1::SolveRequest& request, grpc::StatusCode code,
                          const std::string& words) {
    const grpc::Status status = Refused(request);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(words));
  };
  expect(Request(lu, MakeMatrix<double>(kN + 1, 1, RandomValues(kN + 1, 15))),
         grpc::StatusCode::INVALID_ARGUMENT, "rhs is 49x1");
  expect(Request(lu, MakeMatrix<float>(kN, 1, std::vector<float>(kN, 1.0f))),
         grpc::StatusCode::INVALID_ARGUMENT, "rhs.dtype is float32");
  expect(Request("", b), grpc::StatusCode::INVALID_ARGUMENT, "factorization names no");
  v1::SolveRequest no_rhs;
  no_rhs.mutable_factorization()->set_handle(lu);
  expect(no_rhs, grpc::StatusCode::INVALID_ARGUMENT, "rhs: none given");
  v1::SolveRequest residual = Request(lu_without_a, b);
  residual.set_residual(true);
  expect(residual, grpc::StatusCode::INVALID_ARGUMENT, "keep_input");
  v1::SolveRequest bad_transpose = Request(lu, b);
  bad_transpose.set_transpose(static_cast<v1::SolveTranspose>(7));
  expect(bad_transpose, grpc::StatusCode::INVALID_ARGUMENT, "transpose is 7");
  std::vector<double> nan_values(kN, 1.0);
  nan_values[3] = std::nan("");
  expect(Request(lu, MakeMatrix<double>(kN, 1, nan_values)), grpc::StatusCode::INVALID_ARGUMENT,
         "rhs[3, 0] is not finite");

  v1::FactorizeRequest keep_input_alone;
  *keep_input_alone.mutable_matrix() = a;
  keep_input_alone.set_kind(v1::FACTORIZATION_KIND_LU);
  keep_input_alone.set_keep_input(true);
  absl::StatusOr<v1::FactorizeResponse> refused = client().Factorize(keep_input_alone);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("keep_input"));
  Release(lu);
  Release(lu_without_a);
  ExpectStillServing();
}

TEST_F(SolveServerTest, SingularKeptLuIsAFailedPrecondition) {
  std::vector<double> values = RandomValues(kN * kN, 16);
  for (int64_t i = 0; i < kN; ++i) values[i * kN + 5] = 0.0;
  const v1::FactorizeResponse kept =
      Keep(MakeMatrix<double>(kN, kN, values), v1::FACTORIZATION_KIND_LU);
  EXPECT_TRUE(kept.singular());
  const std::string handle = kept.kept().at("factorization").handle();
  const grpc::Status status =
      Refused(Request(handle, MakeMatrix<double>(kN, 1, RandomValues(kN, 17))));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("singular"));
  Release(handle);
}

TEST_F(SolveServerTest, CholeskyTransposeIsRefused) {
  std::vector<double> identity(static_cast<size_t>(kN * kN), 0.0);
  for (int64_t i = 0; i < kN; ++i) identity[i * kN + i] = 2.0;
  const std::string handle =
      Keep(MakeMatrix<double>(kN, kN, identity), v1::FACTORIZATION_KIND_CHOLESKY)
          .kept()
          .at("factorization")
          .handle();
  v1::SolveRequest request = Request(handle, MakeMatrix<double>(kN, 1, RandomValues(kN, 18)));
  request.set_transpose(v1::SOLVE_TRANSPOSE_TRANSPOSE);
  const grpc::Status status = Refused(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("LU factorizations only"));
  Release(handle);
}

TEST_F(SolveServerTest, SubmittedSolveJobGivesTheSynchronousSolution) {
  const v1::Matrix a = WellConditioned(kN, 19);
  const v1::Matrix b = MakeMatrix<double>(kN, 2, RandomValues(kN * 2, 20));
  const std::string handle = Keep(a, v1::FACTORIZATION_KIND_LU).kept().at("factorization").handle();
  v1::SolveResponse direct;
  ASSERT_TRUE(Call(Request(handle, b), &direct).ok());

  v1::JobRequest job;
  *job.mutable_solve() = Request(handle, b);
  job.mutable_solve()->set_residual(true);
  absl::StatusOr<std::string> id = client().Submit(job);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::JobUpdate> done = client().Watch(*id);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->error().message();
  ASSERT_TRUE(done->has_solve());
  EXPECT_EQ(Values(done->solve().solution()), Values(direct.solution()));
  EXPECT_LT(done->solve().residual(), 1e-14);
  Release(handle);
}

TEST_F(SolveServerTest, ClientSolvesWithAnAdoptedFactorizationAndAResidentRhs) {
  const v1::Matrix a = WellConditioned(kN, 21);
  const v1::Matrix b = MakeMatrix<double>(kN, 1, RandomValues(kN, 22));
  std::map<std::string, RemoteMatrix> kept =
      client().Adopt(Keep(a, v1::FACTORIZATION_KIND_LU).kept());
  ASSERT_TRUE(kept.contains("factorization"));
  absl::StatusOr<RemoteMatrix> rhs = client().Upload(b);
  ASSERT_TRUE(rhs.ok()) << rhs.status();

  absl::StatusOr<v1::SolveResponse> by_value = client().Solve(kept.at("factorization"), b);
  ASSERT_TRUE(by_value.ok()) << by_value.status();
  absl::StatusOr<v1::SolveResponse> by_handle = client().Solve(kept.at("factorization"), *rhs);
  ASSERT_TRUE(by_handle.ok()) << by_handle.status();
  EXPECT_EQ(Values(by_value->solution()), Values(by_handle->solution()));
  std::vector<double> residual = Values(b);  // b - A x, by the test
  const std::vector<double> x = Values(by_value->solution());
  const std::vector<double> a_values = Values(a);
  for (int64_t i = 0; i < kN; ++i) {
    for (int64_t j = 0; j < kN; ++j) residual[i] -= a_values[i * kN + j] * x[j];
  }
  for (double r : residual) EXPECT_LT(std::abs(r), 1e-12);
}

// Matrices of a batch stacked: WellConditioned(kSmall, seed + i) for i < count.
constexpr int64_t kSmall = 6;
v1::Matrix StackedBatch(int64_t count, uint64_t seed, bool symmetric_positive) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<double> member = Values(WellConditioned(kSmall, seed + static_cast<uint64_t>(i)));
    if (symmetric_positive) {  // M^T M + n I
      std::vector<double> spd(member.size(), 0.0);
      for (int64_t r = 0; r < kSmall; ++r) {
        for (int64_t c = 0; c < kSmall; ++c) {
          for (int64_t k = 0; k < kSmall; ++k) {
            spd[r * kSmall + c] += member[k * kSmall + r] * member[k * kSmall + c];
          }
        }
        spd[r * kSmall + r] += kSmall;
      }
      member = spd;
    }
    values.insert(values.end(), member.begin(), member.end());
  }
  return MakeMatrix<double>(count * kSmall, kSmall, values);
}

TEST_F(SolveServerTest, KeptBatchesSolveEachMemberAsTheInlineBatchedSolve) {
  constexpr int64_t kCount = 5;
  for (const v1::FactorizationKind kind :
       {v1::FACTORIZATION_KIND_LU, v1::FACTORIZATION_KIND_CHOLESKY, v1::FACTORIZATION_KIND_QR}) {
    SCOPED_TRACE(v1::FactorizationKind_Name(kind));
    const v1::Matrix a = StackedBatch(kCount, 30, kind == v1::FACTORIZATION_KIND_CHOLESKY);
    const v1::Matrix b =
        MakeMatrix<double>(kCount * kSmall, 2, RandomValues(kCount * kSmall * 2, 31));
    v1::FactorizeRequest keep;
    *keep.mutable_matrix() = a;
    keep.set_kind(kind);
    keep.set_batch_count(kCount);
    keep.set_keep_input(true);
    keep.mutable_result_options()->set_keep_result(true);
    absl::StatusOr<v1::FactorizeResponse> kept = client().Factorize(keep);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ASSERT_TRUE(kept->kept().contains("factorization"));
    const v1::ResidentMatrix& factorization = kept->kept().at("factorization");
    EXPECT_EQ(factorization.batch_count(), kCount);
    EXPECT_TRUE(factorization.input_kept());

    v1::FactorizeRequest inline_request;
    *inline_request.mutable_matrix() = a;
    inline_request.set_kind(kind);
    inline_request.set_batch_count(kCount);
    *inline_request.mutable_rhs() = b;
    absl::StatusOr<v1::FactorizeResponse> inline_response = client().Factorize(inline_request);
    ASSERT_TRUE(inline_response.ok()) << inline_response.status();

    v1::SolveRequest request = Request(factorization.handle(), b);
    request.set_residual(true);
    v1::SolveResponse response;
    const grpc::Status status = Call(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.solution().rows(), kCount * kSmall);
    EXPECT_LE(RelativeDistance(Values(response.solution()), Values(inline_response->solution())),
              1e-13);
    EXPECT_LT(response.residual(), 1e-14);

    // B must stack one block per member.
    const grpc::Status short_rhs = Refused(
        Request(factorization.handle(), MakeMatrix<double>(kSmall, 1, RandomValues(kSmall, 32))));
    EXPECT_EQ(short_rhs.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(short_rhs.error_message(), HasSubstr("5 stacked blocks of 6"));
    Release(factorization.handle());
  }
}

TEST_F(SolveServerTest, KeptBatchWithASingularMemberNamesIt) {
  std::vector<double> values = Values(StackedBatch(3, 40, false));
  for (int64_t c = 0; c < kSmall; ++c) values[(2 * kSmall + 3) * kSmall + c] = 0.0;  // member 2
  v1::FactorizeRequest keep;
  *keep.mutable_matrix() = MakeMatrix<double>(3 * kSmall, kSmall, values);
  keep.set_kind(v1::FACTORIZATION_KIND_LU);
  keep.set_batch_count(3);
  keep.mutable_result_options()->set_keep_result(true);
  absl::StatusOr<v1::FactorizeResponse> kept = client().Factorize(keep);
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::string handle = kept->kept().at("factorization").handle();
  const grpc::Status status =
      Refused(Request(handle, MakeMatrix<double>(3 * kSmall, 1, RandomValues(3 * kSmall, 41))));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("of batch member 2 is singular"));
  Release(handle);
}

}  // namespace
}  // namespace matrixd::server::testing
