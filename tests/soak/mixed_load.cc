#include "tests/soak/mixed_load.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/load_requests.h"
#include "client/matrix_generators.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

namespace matrixd::soak {
namespace {

// Long enough for any request of the soak on a loaded 2-core machine: only the short-deadline
// way may run out of time.
constexpr absl::Duration kLongDeadline = absl::Seconds(60);

enum class Way { kSync, kShortDeadline, kWatch, kJobTimeout, kCancel, kKeptSolve };

absl::string_view WayName(Way way) {
  switch (way) {
    case Way::kSync:
      return "sync";
    case Way::kShortDeadline:
      return "short-deadline";
    case Way::kWatch:
      return "submit-watch";
    case Way::kJobTimeout:
      return "job-timeout";
    case Way::kCancel:
      return "submit-cancel";
    case Way::kKeptSolve:
      return "kept-solve";
  }
  return "?";
}

// How a request ended: its status, and for an OK one whether its result was right.
struct Outcome {
  absl::Status status;
  absl::Status check;  // OK unless a returned result was wrong
};

Outcome Checked(const v1::JobRequest& request, absl::StatusOr<v1::JobUpdate> result) {
  if (!result.ok()) return {result.status(), absl::OkStatus()};
  return {absl::OkStatus(), CheckJobResult(request, *result)};
}

// A finished job's status: OK when it succeeded, else its error's code.
absl::Status JobStatus(const v1::JobUpdate& update) {
  if (update.state() == v1::JOB_STATE_SUCCEEDED) return absl::OkStatus();
  if (!update.has_error()) {
    return absl::UnknownError(absl::StrCat("job ", update.job_id(), " ended in state ",
                                           v1::JobState_Name(update.state()), " without an error"));
  }
  return absl::Status(static_cast<absl::StatusCode>(update.error().code()),
                      absl::StrCat("job ", update.job_id(), ": ", update.error().message()));
}

// Submit, then (when asked) Cancel at once, then Watch to the end.
Outcome FollowJob(Client& client, const v1::JobRequest& request, bool cancel) {
  absl::StatusOr<std::string> id = client.Submit(request);
  if (!id.ok()) return {id.status(), absl::OkStatus()};
  if (cancel) {
    absl::StatusOr<v1::JobUpdate> cancelled = client.Cancel(*id);
    if (!cancelled.ok()) return {cancelled.status(), absl::OkStatus()};
  }
  absl::StatusOr<v1::JobUpdate> update = client.Watch(*id);
  if (!update.ok()) return {update.status(), absl::OkStatus()};
  const absl::Status status = JobStatus(*update);
  if (!status.ok()) return {status, absl::OkStatus()};
  return {absl::OkStatus(), CheckJobResult(request, *update)};
}

// LU kept on the server (with the inline solve checked as usual), then Solve with a new
// right-hand side through the kept handle; the handle is released when `kept` goes.
Outcome KeptSolve(Client& client, const v1::JobRequest& request, std::mt19937_64& rng) {
  v1::JobRequest keep = request;
  v1::ResultOptions& result_options = *keep.mutable_factorize()->mutable_result_options();
  result_options.set_keep_result(true);
  result_options.set_also_inline(true);  // the factors come back too, to be checked
  absl::StatusOr<v1::FactorizeResponse> factorized = client.Factorize(keep.factorize());
  if (!factorized.ok()) return {factorized.status(), absl::OkStatus()};
  std::map<std::string, RemoteMatrix> kept = client.Adopt(factorized->kept());
  v1::JobUpdate update;
  update.set_state(v1::JOB_STATE_SUCCEEDED);
  *update.mutable_factorize() = *std::move(factorized);
  absl::Status check = CheckJobResult(request, update);
  if (!check.ok()) return {absl::OkStatus(), check};
  const auto factorization = kept.find("factorization");
  if (factorization == kept.end()) {
    return {absl::OkStatus(),
            absl::InternalError("wrong result: keep_result kept no factorization")};
  }
  const v1::Matrix& a = request.factorize().matrix();
  const int64_t columns = std::uniform_int_distribution<int64_t>(1, 4)(rng);
  v1::Matrix rhs = RandomMatrix(a.rows(), columns, v1::DTYPE_FLOAT64, rng());
  absl::StatusOr<v1::SolveResponse> solved = client.Solve(factorization->second, rhs);
  if (!solved.ok()) return {solved.status(), absl::OkStatus()};
  return {absl::OkStatus(), CheckSolution(a, rhs, solved->solution())};
}

Way PickWay(SoakOp op, std::mt19937_64& rng) {
  // Weights of sync, short deadline, submit + watch, job timeout, submit + cancel, kept solve.
  std::discrete_distribution<int> pick({30, 15, 20, 10, 15, 10});
  const auto way = static_cast<Way>(pick(rng));
  return way == Way::kKeptSolve && op != SoakOp::kFactorize ? Way::kSync : way;
}

void RecordOutcome(const Outcome& outcome, absl::Time start, SoakTally& tally) {
  const absl::Time end = absl::Now();
  tally.calls.Record(outcome.status, 1, end - start, end);
  if (!outcome.status.ok()) return;
  ++tally.checked;
  if (!outcome.check.ok()) {
    if (tally.wrong++ == 0) tally.first_wrong = std::string(outcome.check.message());
  }
}

SoakTally RunCheckedClient(const MixedLoadOptions& options, uint64_t seed, absl::Time until) {
  std::mt19937_64 rng(seed);
  Client client(options.target, {.deadline = kLongDeadline});
  SoakTally tally;
  while (absl::Now() < until) {
    const SoakOp op = kSoakOps[std::uniform_int_distribution<int>(0, 3)(rng)];
    v1::JobRequest request = MakeCheckedRequest(op, options.sizes, rng);
    const Way way = PickWay(op, rng);
    ++tally.by_way[absl::StrCat(SoakOpName(op), "/", WayName(way))];
    const absl::Time start = absl::Now();
    Outcome outcome;
    switch (way) {
      case Way::kSync:
        outcome = Checked(request, CallJobRequest(client, request));
        break;
      case Way::kShortDeadline:
        client.set_deadline(
            absl::Microseconds(std::uniform_int_distribution<int64_t>(500, 20000)(rng)));
        outcome = Checked(request, CallJobRequest(client, request));
        client.set_deadline(kLongDeadline);
        break;
      case Way::kWatch:
        outcome = FollowJob(client, request, /*cancel=*/false);
        break;
      case Way::kJobTimeout:
        request.set_timeout_seconds(std::uniform_real_distribution<double>(0.0005, 0.02)(rng));
        outcome = FollowJob(client, request, /*cancel=*/false);
        break;
      case Way::kCancel:
        outcome = FollowJob(client, request, /*cancel=*/true);
        break;
      case Way::kKeptSolve:
        outcome = KeptSolve(client, request, rng);
        break;
    }
    RecordOutcome(outcome, start, tally);
  }
  return tally;
}

// An Upload stream that sends the shape and half of a matrix's bytes, then is cancelled by its
// client: the server must keep nothing of it.
absl::Status DropUpload(v1::MatrixService::Stub& stub, std::mt19937_64& rng) {
  const int64_t n = std::uniform_int_distribution<int64_t>(2, 64)(rng);
  const v1::Matrix matrix = RandomMatrix(n, n, v1::DTYPE_FLOAT64, rng());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::ResidentMatrix response;
  std::unique_ptr<grpc::ClientWriter<v1::UploadChunk>> writer = stub.Upload(&context, &response);
  v1::UploadChunk chunk;
  chunk.set_rows(n);
  chunk.set_cols(n);
  chunk.set_dtype(v1::DTYPE_FLOAT64);
  chunk.set_offset(0);
  chunk.set_data(matrix.data().substr(0, matrix.data().size() / 2));
  chunk.set_label("soak-dropped-upload");
  writer->Write(chunk);
  context.TryCancel();
  const grpc::Status status = writer->Finish();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// A job submitted, its Watch stream opened, one update read and the stream cancelled by the
// client; then the job is followed to its end through a new Watch and its result checked: a
// watcher leaving must not disturb the job.
void DropWatch(v1::MatrixService::Stub& stub, Client& client, const SoakSizes& sizes,
               std::mt19937_64& rng, SoakTally& tally) {
  const v1::JobRequest request = MakeCheckedRequest(SoakOp::kPermanent, sizes, rng);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> id = client.Submit(request);
  if (!id.ok()) {
    RecordOutcome({id.status(), absl::OkStatus()}, start, tally);
    return;
  }
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::JobId job_id;
    job_id.set_job_id(*id);
    std::unique_ptr<grpc::ClientReader<v1::JobUpdate>> reader = stub.Watch(&context, job_id);
    v1::JobUpdate update;
    reader->Read(&update);
    context.TryCancel();
    const grpc::Status status = reader->Finish();
    ++tally.dropped_watches;
    ++tally.by_way["stream/dropped-watch"];
    RecordOutcome(
        {absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message()),
         absl::OkStatus()},
        start, tally);
  }
  ++tally.by_way["permanent/after-dropped-watch"];
  absl::StatusOr<v1::JobUpdate> update = client.Watch(*id);
  if (!update.ok()) {
    RecordOutcome({update.status(), absl::OkStatus()}, start, tally);
    return;
  }
  const absl::Status status = JobStatus(*update);
  RecordOutcome({status, status.ok() ? CheckJobResult(request, *update) : absl::OkStatus()}, start,
                tally);
}

SoakTally RunDroppingClient(const MixedLoadOptions& options, uint64_t seed, absl::Time until) {
  std::mt19937_64 rng(seed);
  Client client(options.target, {.deadline = kLongDeadline});
  std::unique_ptr<v1::MatrixService::Stub> stub = v1::MatrixService::NewStub(
      grpc::CreateChannel(options.target, grpc::InsecureChannelCredentials()));
  SoakTally tally;
  for (int round = 0; absl::Now() < until; ++round) {
    if (round % 2 == 0) {
      const absl::Time start = absl::Now();
      ++tally.dropped_uploads;
      ++tally.by_way["stream/dropped-upload"];
      RecordOutcome({DropUpload(*stub, rng), absl::OkStatus()}, start, tally);
    } else {
      DropWatch(*stub, client, options.sizes, rng, tally);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return tally;
}

}  // namespace

void SoakTally::Merge(const SoakTally& other) {
  calls.Merge(other.calls);
  checked += other.checked;
  if (wrong == 0 && other.wrong > 0) first_wrong = other.first_wrong;
  wrong += other.wrong;
  dropped_uploads += other.dropped_uploads;
  dropped_watches += other.dropped_watches;
  for (const auto& [way, count] : other.by_way) by_way[way] += count;
}

SoakTally RunMixedLoad(const MixedLoadOptions& options, absl::Time until) {
  std::vector<SoakTally> tallies(static_cast<size_t>(options.clients) + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < options.clients; ++i) {
    threads.emplace_back([&, i] {
      tallies[static_cast<size_t>(i)] =
          RunCheckedClient(options, options.seed * 1000003 + static_cast<uint64_t>(i), until);
    });
  }
  threads.emplace_back(
      [&] { tallies.back() = RunDroppingClient(options, options.seed * 1000003 + 999983, until); });
  for (std::thread& thread : threads) thread.join();
  SoakTally total;
  for (const SoakTally& tally : tallies) total.Merge(tally);
  return total;
}

}  // namespace matrixd::soak
