// Injected backend failures through the whole server (tests/server/faulty_backend.h): a failing
// status, std::bad_alloc, another exception and a wrong-shaped result, in unary calls, in calls
// that keep their result, and in Submit jobs followed with Watch. Each time the call or job fails
// with a clear status (never a crash, a hang or an answer), the server's accounting (device-memory
// admission, resident matrices, queue) returns to where it was, and the next job is right.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/faulty_backend.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

// What a failed job must give back, all of it.
struct Accounting {
  uint64_t admitted = 0;        // device-memory admission: reserved bytes
  uint64_t resident_bytes = 0;  // resident registry: committed and pending bytes
  size_t resident_matrices = 0;
  int running = 0;  // scheduler
  int queued = 0;
};

// A is [[2, 1], [1, 3]]: det 5. For the product, A times [[1, 0], [2, 1]] = [[4, 1], [7, 3]].
v1::Matrix A() { return MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0}); }

v1::DeterminantRequest DeterminantOfA() {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = A();
  return request;
}

v1::MultiplyRequest ProductWithA(bool keep) {
  v1::MultiplyRequest request;
  *request.mutable_a() = A();
  *request.mutable_b() = MakeMatrix<double>(2, 2, {1.0, 0.0, 2.0, 1.0});
  if (keep) request.mutable_result_options()->set_keep_result(true);
  return request;
}

v1::FactorizeRequest KeptLuOfA() {
  v1::FactorizeRequest request;
  *request.mutable_matrix() = A();
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  request.mutable_result_options()->set_keep_result(true);
  return request;
}

// A x = [1, 2]: x = [1/5, 3/5].
v1::SolveRequest SolveWith(const std::string& factorization, bool keep) {
  v1::SolveRequest request;
  request.mutable_factorization()->set_handle(factorization);
  *request.mutable_rhs() = MakeMatrix<double>(2, 1, {1.0, 2.0});
  if (keep) request.mutable_result_options()->set_keep_result(true);
  return request;
}

std::vector<double> Values(const v1::Matrix& matrix) {
  absl::StatusOr<std::vector<double>> values = ReadMatrix<double>(matrix);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<double>{};
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "entry " << i;
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = std::make_unique<FaultyBackend>();
    backend_ = backend.get();
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = TestLimits();
    options.scheduler.workers = 2;
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(std::move(backend), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_NE(server_->memory_admission(), nullptr);
    client_ =
        std::make_unique<Client>(server_->address(), ClientOptions{.deadline = absl::Seconds(20)});
    baseline_ = Now();
  }

  Accounting Now() {
    return {.admitted = server_->memory_admission()->reserved(),
            .resident_bytes = server_->resident().resident_bytes(),
            .resident_matrices = server_->resident().List().size(),
            .running = server_->scheduler().running(),
            .queued = server_->scheduler().queued()};
  }

  // The accounting is back at the baseline (a job's last references may go just after its
  // response is sent: give it a moment).
  void ExpectBaseline() {
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    Accounting now = Now();
    while (!Same(now, baseline_) && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
      now = Now();
    }
    EXPECT_EQ(now.admitted, baseline_.admitted) << "device memory still admitted";
    EXPECT_EQ(now.resident_bytes, baseline_.resident_bytes) << "resident bytes left behind";
    EXPECT_EQ(now.resident_matrices, baseline_.resident_matrices) << "resident matrices left";
    EXPECT_EQ(now.running, baseline_.running);
    EXPECT_EQ(now.queued, baseline_.queued);
  }

  static bool Same(const Accounting& x, const Accounting& y) {
    return x.admitted == y.admitted && x.resident_bytes == y.resident_bytes &&
           x.resident_matrices == y.resident_matrices && x.running == y.running &&
           x.queued == y.queued;
  }

  void ExpectRightDeterminant() {
    absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(DeterminantOfA());
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_NEAR(response->value(), 5.0, 1e-14);
  }

  void ExpectRightProduct() {
    absl::StatusOr<v1::MultiplyResponse> response = client_->Multiply(ProductWithA(false));
    ASSERT_TRUE(response.ok()) << response.status();
    ExpectNear(Values(response->c()), {4.0, 1.0, 7.0, 3.0});
  }

  // Submits `request`, follows it with Watch to its end, and returns the last update.
  v1::JobUpdate SubmitAndWatch(const v1::JobRequest& request) {
    absl::StatusOr<std::string> id = client_->Submit(request);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return {};
    absl::StatusOr<v1::JobUpdate> last = client_->Watch(*id);
    EXPECT_TRUE(last.ok()) << last.status();
    return last.ok() ? *last : v1::JobUpdate();
  }

  FaultyBackend* backend_ = nullptr;
  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
  Accounting baseline_;
};

TEST_F(FaultInjectionTest, BackendErrorStatusReachesTheClientAndTheNextJobIsRight) {
  backend_->Arm({.call = FaultyCall::kDeterminant,
                 .status = absl::InternalError("injected: cusolverDnDgetrf failed")});
  absl::StatusOr<v1::DeterminantResponse> failed = client_->Determinant(DeterminantOfA());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("cusolverDnDgetrf failed"));
  EXPECT_EQ(backend_->fired(), 1);
  ExpectBaseline();
  ExpectRightDeterminant();
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, FaultOnALaterCallStrikesOnlyThatCall) {
  backend_->Arm({.call = FaultyCall::kMultiply, .nth = 3});
  ExpectRightProduct();
  ExpectRightProduct();
  EXPECT_EQ(client_->Multiply(ProductWithA(false)).status().code(), absl::StatusCode::kInternal);
  ExpectRightProduct();
  EXPECT_EQ(backend_->fired(), 1);
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, BadAllocIsResourceExhaustedNamingTheOperation) {
  backend_->Arm({.call = FaultyCall::kMultiply, .kind = FaultKind::kBadAlloc});
  absl::StatusOr<v1::MultiplyResponse> failed = client_->Multiply(ProductWithA(false));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("multiply: out of memory"));
  ExpectBaseline();
  ExpectRightProduct();
}

TEST_F(FaultInjectionTest, ExceptionIsInternalWithItsMessage) {
  backend_->Arm({.call = FaultyCall::kPermanent, .kind = FaultKind::kException});
  v1::PermanentRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(3, 3, std::vector<double>(9, 1.0));
  absl::StatusOr<v1::PermanentResponse> failed = client_->Permanent(request);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("permanent: injected fault: the backend threw"));
  ExpectBaseline();
  absl::StatusOr<v1::PermanentResponse> again = client_->Permanent(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(again->value(), 6.0, 1e-13);  // 3!
}

TEST_F(FaultInjectionTest, WrongShapedProductIsInternalNotAnAnswer) {
  backend_->Arm({.call = FaultyCall::kMultiply, .kind = FaultKind::kWrongShape});
  absl::StatusOr<v1::MultiplyResponse> failed = client_->Multiply(ProductWithA(false));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_THAT(failed.status().message(),
              HasSubstr("multiply result c as a 1x2 float64 matrix; want 2x2 float64"));
  ExpectBaseline();
  ExpectRightProduct();
}

TEST_F(FaultInjectionTest, FailedProductWithKeepResultKeepsNothing) {
  for (FaultKind kind : {FaultKind::kStatus, FaultKind::kBadAlloc, FaultKind::kWrongShape}) {
    SCOPED_TRACE(static_cast<int>(kind));
    backend_->Arm({.call = FaultyCall::kMultiply, .kind = kind});
    absl::StatusOr<v1::MultiplyResponse> failed = client_->Multiply(ProductWithA(true));
    EXPECT_FALSE(failed.ok());
    EXPECT_NE(failed.status().code(), absl::StatusCode::kUnknown) << failed.status();
    ExpectBaseline();
  }
  // The kept product afterwards holds the right C, and releasing it returns to the baseline.
  absl::StatusOr<v1::MultiplyResponse> kept = client_->Multiply(ProductWithA(true));
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(kept->kept().contains("c"));
  const std::string handle = kept->kept().at("c").handle();
  absl::StatusOr<v1::Matrix> c = client_->Download(handle);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectNear(Values(*c), {4.0, 1.0, 7.0, 3.0});
  ASSERT_TRUE(client_->Release(handle).ok());
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, FailedAllocationOfAKeptFactorizationsPartKeepsNothing) {
  // The factor is allocated first, then its permutation: fail the second allocation.
  backend_->Arm({.call = FaultyCall::kAllocateResident,
                 .nth = 2,
                 .status = absl::ResourceExhaustedError("injected: device full")});
  absl::StatusOr<v1::FactorizeResponse> failed = client_->Factorize(KeptLuOfA());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("injected: device full"));
  EXPECT_EQ(backend_->fired(), 1);
  ExpectBaseline();

  absl::StatusOr<v1::FactorizeResponse> kept = client_->Factorize(KeptLuOfA());
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::string handle = kept->kept().at("factorization").handle();
  absl::StatusOr<v1::SolveResponse> solved = client_->Solve(SolveWith(handle, false));
  ASSERT_TRUE(solved.ok()) << solved.status();
  ExpectNear(Values(solved->solution()), {0.2, 0.6});
  ASSERT_TRUE(client_->Release(handle).ok());
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, FailedSolveIntoAKeptResultFreesItsRoom) {
  absl::StatusOr<v1::FactorizeResponse> kept = client_->Factorize(KeptLuOfA());
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::string handle = kept->kept().at("factorization").handle();
  baseline_ = Now();  // the kept factorization stays; a failed solve must add nothing to it
  EXPECT_GT(baseline_.resident_bytes, 0u);
  EXPECT_GT(baseline_.admitted, 0u) << "a resident matrix on the device holds admission bytes";
  // Room for X is made before the solve runs (a device backend writes it in place): the failure
  // must give it back, whether the solve fails or answers a wrong shape.
  for (FaultKind kind : {FaultKind::kStatus, FaultKind::kWrongShape}) {
    SCOPED_TRACE(static_cast<int>(kind));
    backend_->Arm({.call = FaultyCall::kSolve, .kind = kind});
    absl::StatusOr<v1::SolveResponse> failed = client_->Solve(SolveWith(handle, true));
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
    ExpectBaseline();
  }
  absl::StatusOr<v1::SolveResponse> solved = client_->Solve(SolveWith(handle, true));
  ASSERT_TRUE(solved.ok()) << solved.status();
  ASSERT_TRUE(solved->kept().contains("solution"));
  const std::string x = solved->kept().at("solution").handle();
  absl::StatusOr<v1::Matrix> downloaded = client_->Download(x);
  ASSERT_TRUE(downloaded.ok()) << downloaded.status();
  ExpectNear(Values(*downloaded), {0.2, 0.6});
  ASSERT_TRUE(client_->Release(x).ok());
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, SubmittedJobFailsVisiblyInWatchAndTheNextJobIsRight) {
  backend_->Arm({.call = FaultyCall::kDeterminant,
                 .status = absl::InternalError("injected: kernel launch failed")});
  v1::JobRequest request;
  *request.mutable_determinant() = DeterminantOfA();
  const v1::JobUpdate failed = SubmitAndWatch(request);
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed.error().code(), static_cast<int>(absl::StatusCode::kInternal));
  EXPECT_THAT(failed.error().message(), HasSubstr("injected: kernel launch failed"));
  EXPECT_FALSE(failed.has_determinant());
  ExpectBaseline();

  const v1::JobUpdate done = SubmitAndWatch(request);
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error().message();
  EXPECT_NEAR(done.determinant().value(), 5.0, 1e-14);
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, SubmittedJobThatKeepsItsResultFailsWithNothingKept) {
  for (FaultKind kind : {FaultKind::kBadAlloc, FaultKind::kWrongShape}) {
    SCOPED_TRACE(static_cast<int>(kind));
    backend_->Arm({.call = FaultyCall::kMultiply, .kind = kind});
    v1::JobRequest request;
    *request.mutable_multiply() = ProductWithA(true);
    const v1::JobUpdate failed = SubmitAndWatch(request);
    EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
    EXPECT_EQ(failed.error().code(),
              static_cast<int>(kind == FaultKind::kBadAlloc ? absl::StatusCode::kResourceExhausted
                                                            : absl::StatusCode::kInternal))
        << failed.error().message();
    EXPECT_THAT(failed.error().message(), HasSubstr("multiply"));
    ExpectBaseline();
  }
  v1::JobRequest request;
  *request.mutable_multiply() = ProductWithA(false);
  const v1::JobUpdate done = SubmitAndWatch(request);
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error().message();
  ExpectNear(Values(done.multiply().c()), {4.0, 1.0, 7.0, 3.0});
  ExpectBaseline();
}

TEST_F(FaultInjectionTest, ManyFailuresInARowLeaveTheServerServing) {
  // Every operation fails in turn, several times; the server answers health checks throughout and
  // its accounting never drifts.
  for (int round = 0; round < 5; ++round) {
    backend_->Arm({.call = FaultyCall::kDeterminant, .kind = FaultKind::kBadAlloc});
    EXPECT_FALSE(client_->Determinant(DeterminantOfA()).ok());
    backend_->Arm({.call = FaultyCall::kMultiply, .kind = FaultKind::kException});
    EXPECT_FALSE(client_->Multiply(ProductWithA(round % 2 == 0)).ok());
    backend_->Arm({.call = FaultyCall::kFactorize});
    EXPECT_FALSE(client_->Factorize(KeptLuOfA()).ok());
    absl::StatusOr<bool> healthy = client_->Healthy();
    ASSERT_TRUE(healthy.ok()) << healthy.status();
    EXPECT_TRUE(*healthy);
  }
  EXPECT_EQ(backend_->fired(), 15);
  ExpectBaseline();
  ExpectRightDeterminant();
  ExpectRightProduct();
}

}  // namespace
}  // namespace matrixd::server::testing
