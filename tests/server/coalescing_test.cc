// Coalesced small jobs (server/coalescing.h, server/coalesced_jobs.h) through the real scheduler
// and the CPU backend: a group's answers equal the answers of its members run alone, bit for bit;
// each member keeps its own errors, cancellation and deadline; keys and the group size bound the
// groups; the window never delays a lone job.
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/backend_wrapper.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/request_jobs.h"
#include "server/scheduler.h"

namespace matrixd::server {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

class GroupRecorder final : public SchedulerObserver {
 public:
  void GroupStarted(absl::string_view /*op*/, int size) override {
    absl::MutexLock lock(&mutex_);
    sizes_.push_back(size);
  }
  std::vector<int> sizes() {
    absl::MutexLock lock(&mutex_);
    return sizes_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<int> sizes_ ABSL_GUARDED_BY(mutex_);
};

// A random rows x cols matrix of `dtype` (float64 or complex64); with `singular`, its second row
// is zero (exactly singular: LU meets an exactly zero pivot).
v1::Matrix RandomMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint32_t seed,
                        bool singular = false) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  v1::Matrix matrix;
  matrix.set_rows(rows);
  matrix.set_cols(cols);
  matrix.set_dtype(dtype);
  std::string bytes;
  if (dtype == v1::DTYPE_COMPLEX64) {
    std::vector<std::complex<float>> values(static_cast<size_t>(rows * cols));
    for (auto& v : values)
      v = {static_cast<float>(normal(random)), static_cast<float>(normal(random))};
    if (singular) std::fill_n(values.begin() + cols, cols, 0);
    bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0]));
  } else {
    std::vector<double> values(static_cast<size_t>(rows * cols));
    for (auto& v : values) v = normal(random);
    if (singular) std::fill_n(values.begin() + cols, cols, 0);
    bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0]));
  }
  matrix.set_data(std::move(bytes));
  return matrix;
}

v1::DeterminantRequest Det(int n, uint32_t seed, v1::DType dtype = v1::DTYPE_FLOAT64) {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = RandomMatrix(n, n, dtype, seed);
  return request;
}

v1::FactorizeRequest Lu(int n, int rhs_cols, uint32_t seed, bool singular = false) {
  v1::FactorizeRequest request;
  request.set_kind(v1::FACTORIZATION_KIND_LU);
  *request.mutable_matrix() = RandomMatrix(n, n, v1::DTYPE_FLOAT64, seed, singular);
  if (rhs_cols > 0) *request.mutable_rhs() = RandomMatrix(n, rhs_cols, v1::DTYPE_FLOAT64, ~seed);
  return request;
}

// One request through the scheduler, its response, and its job.
template <typename Request, typename Response>
struct Call {
  Request request;
  Response response;
  std::shared_ptr<Job> job;
};
using DetCall = Call<v1::DeterminantRequest, v1::DeterminantResponse>;
using LuCall = Call<v1::FactorizeRequest, v1::FactorizeResponse>;

// The response without its stats: what must not depend on coalescing.
template <typename Response>
std::string ResultBytes(Response response) {
  response.clear_stats();
  return response.SerializeAsString();
}

class CoalescingTest : public ::testing::Test {
 protected:
  std::unique_ptr<Scheduler> Start(CoalesceOptions coalesce, int workers = 1) {
    SchedulerOptions options{.workers = workers, .observer = &recorder_, .coalesce = coalesce};
    EXPECT_TRUE(ValidateSchedulerOptions(options).ok());
    return std::make_unique<Scheduler>(options);
  }

  // Occupies a worker until the returned notification is notified.
  std::shared_ptr<absl::Notification> Block(Scheduler& scheduler) {
    auto release = std::make_shared<absl::Notification>();
    JobSpec spec;
    spec.op = "block";
    spec.work = [release](JobControl&) {
      release->WaitForNotification();
      return absl::OkStatus();
    };
    absl::StatusOr<std::shared_ptr<Job>> job = scheduler.Submit(std::move(spec), false);
    EXPECT_TRUE(job.ok());
    (*job)->AwaitStateOtherThan(JobState::kQueued, absl::Now() + absl::Seconds(10));
    return release;
  }

  template <typename C>
  void Submit(Scheduler& scheduler, C& call, absl::Time deadline = absl::InfiniteFuture()) {
    absl::StatusOr<JobSpec> spec = MakeJob(call.request, &call.response, *backend_, limits_);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_NE(spec->coalescible, nullptr);
    spec->deadline = deadline;
    absl::StatusOr<std::shared_ptr<Job>> job = scheduler.Submit(*std::move(spec), false);
    ASSERT_TRUE(job.ok()) << job.status();
    call.job = *std::move(job);
  }

  // The response of `request` run alone, outside any scheduler.
  template <typename Response, typename Request>
  absl::StatusOr<Response> Alone(const Request& request) {
    Response response;
    absl::StatusOr<JobSpec> spec = MakeJob(request, &response, *backend_, limits_);
    if (!spec.ok()) return spec.status();
    JobControl control;
    if (absl::Status s = spec->work(control); !s.ok()) return s;
    return response;
  }

  static absl::Status Finished(const Job& job) {
    EXPECT_TRUE(job.AwaitFinished(absl::Now() + absl::Seconds(20)));
    return job.status();
  }

  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.threads = 1});
  Limits limits_{.max_elements = int64_t{1} << 16, .max_permanent_n = 12};
  GroupRecorder recorder_;
};

TEST_F(CoalescingTest, CoalescedDeterminantsEqualTheirAnswersAloneBitForBit) {
  auto scheduler = Start({.max_group = 64});
  auto release = Block(*scheduler);
  std::vector<std::unique_ptr<DetCall>> calls;
  for (int i = 0; i < 16; ++i) {
    calls.push_back(std::make_unique<DetCall>());
    calls.back()->request = i % 2 == 0 ? Det(8, 100 + i) : Det(5, 100 + i, v1::DTYPE_COMPLEX64);
    Submit(*scheduler, *calls.back());
  }
  release->Notify();
  for (const auto& call : calls) {
    ASSERT_TRUE(Finished(*call->job).ok()) << call->job->status();
    absl::StatusOr<v1::DeterminantResponse> alone = Alone<v1::DeterminantResponse>(call->request);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(ResultBytes(call->response), ResultBytes(*alone));
    EXPECT_EQ(call->response.stats().result_crc32c(), alone->stats().result_crc32c());
    EXPECT_THAT(call->response.stats().algorithm(), StartsWith("coalesced(8)+"));
  }
  EXPECT_THAT(recorder_.sizes(), ElementsAre(8, 8));
}

// A backend that answers determinants of order <= 8 on the host (as the CUDA backend does small
// ones): those are not coalesced, larger ones and LU factorizations still are.
class HostSmallDeterminants final : public BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  bool DeterminantRunsOnHost(const MatrixView& a,
                             const DeterminantOptions& /*options*/) const override {
    return a.rows <= 8;
  }
};

TEST_F(CoalescingTest, DeterminantsTheBackendAnswersOnTheHostAreNotCoalesced) {
  HostSmallDeterminants backend(MakeCpuBackend({.threads = 1}));
  const v1::DeterminantRequest small = Det(8, 900);
  const v1::DeterminantRequest large = Det(9, 901);
  const v1::FactorizeRequest lu = Lu(8, 0, 902);
  v1::DeterminantResponse small_response;
  v1::DeterminantResponse large_response;
  v1::FactorizeResponse lu_response;
  absl::StatusOr<JobSpec> spec = MakeJob(small, &small_response, backend, limits_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->coalescible, nullptr);
  spec = MakeJob(large, &large_response, backend, limits_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_NE(spec->coalescible, nullptr);
  spec = MakeJob(lu, &lu_response, backend, limits_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_NE(spec->coalescible, nullptr);
}

// The same for factorizations of order <= 8 (FactorizeRunsOnHost): not coalesced, and marked to
// run on the host (inline where small enough); larger ones still coalesce.
class HostSmallFactorizations final : public BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  bool FactorizeRunsOnHost(const MatrixView& a, const FactorizeOptions& /*options*/,
                           const MatrixView* /*rhs*/) const override {
    return a.rows <= 8;
  }
};

TEST_F(CoalescingTest, FactorizationsTheBackendAnswersOnTheHostAreNotCoalesced) {
  HostSmallFactorizations backend(MakeCpuBackend({.threads = 1}));
  v1::FactorizeResponse small_response;
  v1::FactorizeResponse large_response;
  absl::StatusOr<JobSpec> spec = MakeJob(Lu(8, 0, 903), &small_response, backend, limits_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->coalescible, nullptr);
  EXPECT_TRUE(spec->runs_on_host);
  spec = MakeJob(Lu(9, 0, 904), &large_response, backend, limits_);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_NE(spec->coalescible, nullptr);
  EXPECT_FALSE(spec->runs_on_host);
}

TEST_F(CoalescingTest, ASingularMemberFailsAloneAndTheOthersSucceed) {
  auto scheduler = Start({.max_group = 64});
  auto release = Block(*scheduler);
  std::vector<std::unique_ptr<LuCall>> solves;
  std::vector<std::unique_ptr<LuCall>> factors;
  for (int i = 0; i < 5; ++i) {
    solves.push_back(std::make_unique<LuCall>());
    solves.back()->request = Lu(6, 2, 200 + i, /*singular=*/i == 2);
    Submit(*scheduler, *solves.back());
  }
  for (int i = 0; i < 4; ++i) {
    factors.push_back(std::make_unique<LuCall>());
    factors.back()->request = Lu(6, 0, 300 + i, /*singular=*/i == 1);
    Submit(*scheduler, *factors.back());
  }
  release->Notify();
  for (int i = 0; i < 5; ++i) {
    const absl::Status status = Finished(*solves[i]->job);
    absl::StatusOr<v1::FactorizeResponse> alone = Alone<v1::FactorizeResponse>(solves[i]->request);
    if (i == 2) {
      EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
      EXPECT_EQ(alone.status().code(), absl::StatusCode::kFailedPrecondition);
      continue;
    }
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(ResultBytes(solves[i]->response), ResultBytes(*alone));
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Finished(*factors[i]->job).ok()) << factors[i]->job->status();
    absl::StatusOr<v1::FactorizeResponse> alone = Alone<v1::FactorizeResponse>(factors[i]->request);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(ResultBytes(factors[i]->response), ResultBytes(*alone));
    EXPECT_THAT(factors[i]->response.stats().algorithm(), StartsWith("coalesced(4)+"));
    EXPECT_EQ(factors[i]->response.singular_column() >= 0, i == 1);
  }
  EXPECT_THAT(recorder_.sizes(), ElementsAre(5, 4));
}

TEST_F(CoalescingTest, DifferentShapesAndOperationsAreNotMerged) {
  auto scheduler = Start({.max_group = 64});
  auto release = Block(*scheduler);
  std::vector<std::unique_ptr<DetCall>> dets;
  std::vector<std::unique_ptr<LuCall>> lus;
  for (int i = 0; i < 7; ++i) {
    if (i % 3 == 2) {
      lus.push_back(std::make_unique<LuCall>());
      lus.back()->request = Lu(4, 0, 400 + i);
      Submit(*scheduler, *lus.back());
    } else {
      dets.push_back(std::make_unique<DetCall>());
      dets.back()->request = Det(i % 3 == 0 ? 4 : 5, 400 + i);
      Submit(*scheduler, *dets.back());
    }
  }
  release->Notify();
  for (const auto& call : dets) EXPECT_TRUE(Finished(*call->job).ok());
  for (const auto& call : lus) EXPECT_TRUE(Finished(*call->job).ok());
  EXPECT_THAT(recorder_.sizes(), UnorderedElementsAre(3, 2, 2));
}

TEST_F(CoalescingTest, AGroupHoldsAtMostMaxGroupJobs) {
  auto scheduler = Start({.max_group = 4});
  auto release = Block(*scheduler);
  std::vector<std::unique_ptr<DetCall>> calls;
  for (int i = 0; i < 10; ++i) {
    calls.push_back(std::make_unique<DetCall>());
    calls.back()->request = Det(8, 500 + i);
    Submit(*scheduler, *calls.back());
  }
  release->Notify();
  for (const auto& call : calls) EXPECT_TRUE(Finished(*call->job).ok());
  EXPECT_THAT(recorder_.sizes(), ElementsAre(4, 4, 2));
}

TEST_F(CoalescingTest, CancelledAndExpiredMembersLeaveTheGroup) {
  auto scheduler = Start({.max_group = 64});
  auto release = Block(*scheduler);
  std::vector<std::unique_ptr<DetCall>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(std::make_unique<DetCall>());
    calls.back()->request = Det(8, 600 + i);
    Submit(*scheduler, *calls.back(),
           i == 3 ? absl::Now() + absl::Milliseconds(50) : absl::InfiniteFuture());
  }
  scheduler->Cancel(*calls[1]->job, absl::CancelledError("the client left"));
  absl::SleepFor(absl::Milliseconds(200));
  release->Notify();
  for (int i = 0; i < 5; ++i) {
    const absl::Status status = Finished(*calls[i]->job);
    if (i == 1) {
      EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    } else if (i == 3) {
      EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    } else {
      EXPECT_TRUE(status.ok()) << status;
      EXPECT_THAT(calls[i]->response.stats().algorithm(), StartsWith("coalesced(3)+"));
    }
  }
  EXPECT_THAT(recorder_.sizes(), ElementsAre(3));
}

TEST_F(CoalescingTest, AMemberCancelledBeforeTheBatchedCallIsNotAnswered) {
  std::vector<v1::DeterminantResponse> responses(3);
  // The jobs borrow their requests' bytes: the requests must outlive them.
  std::vector<v1::DeterminantRequest> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(Det(8, 700 + i));
  std::vector<std::shared_ptr<CoalescibleWork>> works;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<JobSpec> spec = MakeJob(requests[i], &responses[i], *backend_, limits_);
    ASSERT_TRUE(spec.ok());
    works.push_back(spec->coalescible);
  }
  JobControl controls[3];
  controls[1].Cancel();
  std::vector<CoalescibleWork*> members = {works[0].get(), works[1].get(), works[2].get()};
  std::vector<JobControl*> member_controls = {&controls[0], &controls[1], &controls[2]};
  JobControl group;
  const std::vector<absl::Status> statuses = works[0]->RunGroup(members, member_controls, group);
  ASSERT_EQ(statuses.size(), 3u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(statuses[2].ok());
  EXPECT_FALSE(responses[1].has_stats());
  EXPECT_THAT(responses[2].stats().algorithm(), StartsWith("coalesced(2)+"));
}

TEST_F(CoalescingTest, ALoneJobOnAnIdleServerDoesNotWaitForTheWindow) {
  auto scheduler = Start({.max_group = 64, .window = absl::Seconds(1)});
  for (int i = 0; i < 3; ++i) {
    DetCall call;
    call.request = Det(8, 800 + i);
    const absl::Time start = absl::Now();
    Submit(*scheduler, call);
    ASSERT_TRUE(Finished(*call.job).ok());
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
    EXPECT_THAT(call.response.stats().algorithm(), ::testing::Not(StartsWith("coalesced")));
  }
  EXPECT_TRUE(recorder_.sizes().empty());
}

TEST_F(CoalescingTest, WindowZeroNeverWaitsOnABusyServer) {
  auto scheduler = Start({.max_group = 64, .window = absl::ZeroDuration()}, /*workers=*/2);
  auto release = Block(*scheduler);  // another job runs: the server is busy
  DetCall call;
  call.request = Det(8, 900);
  const absl::Time start = absl::Now();
  Submit(*scheduler, call);
  ASSERT_TRUE(Finished(*call.job).ok());
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  release->Notify();
}

TEST_F(CoalescingTest, OnABusyServerTheWindowGathersLaterArrivals) {
  auto scheduler = Start({.max_group = 2, .window = absl::Seconds(1)}, /*workers=*/2);
  auto release = Block(*scheduler);
  DetCall first;
  DetCall second;
  first.request = Det(8, 1000);
  second.request = Det(8, 1001);
  Submit(*scheduler, first);
  absl::SleepFor(absl::Milliseconds(50));
  Submit(*scheduler, second);
  ASSERT_TRUE(Finished(*first.job).ok());
  ASSERT_TRUE(Finished(*second.job).ok());
  // The group filled up (max_group 2) before the window ran out.
  EXPECT_THAT(recorder_.sizes(), ElementsAre(2));
  EXPECT_THAT(first.response.stats().algorithm(), StartsWith("coalesced(2)+"));
  release->Notify();
}

}  // namespace
}  // namespace matrixd::server
