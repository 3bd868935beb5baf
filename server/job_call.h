// One computing call (Determinant, Factorize, Solve, Multiply, Permanent) as a job, whatever gRPC
// API serves it: the callback API (server/job_call_reactor.h) or the completion-queue API
// (server/async_job_calls.h). Start validates the request and queues its job; the job's
// on_finished hook finishes the call on the thread that ended it (a worker, or the thread that
// called Start when the job runs inline or is refused), with the response-size limit applied and
// quota refusals counted. Cancel cancels the job when the client cancels or the deadline passes
// (a queued job ends at once, a running one at its backend's next check). No thread waits.
#ifndef MATRIXD_SERVER_JOB_CALL_H_
#define MATRIXD_SERVER_JOB_CALL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/validation.h"
#include "server/client_auth.h"
#include "server/guarded.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/request_jobs.h"
#include "server/resident_registry.h"
#include "server/scheduler.h"
#include "server/status_conversion.h"

namespace matrixd::server {

// What computing calls run on. Everything must outlive the calls.
struct JobCallServices {
  Backend& backend;
  Scheduler& scheduler;
  const Limits& limits;        // the server's (the client's own are in `client`)
  ResidentRegistry* resident;  // may be null: no resident matrices
  Metrics* metrics;            // may be null
  int64_t max_response_bytes;  // larger responses are refused (gRPC would fail to send them)
  SharedMemoryRegistry* shared_memory = nullptr;  // may be null: no shared-memory matrices
  std::shared_ptr<const ClientIdentity> client;   // the caller; never null
};

// Counts `status` in matrixd_client_rejections_total when it is a quota refusal
// (RESOURCE_EXHAUSTED "quota NAME ..."), by the quota's name. `metrics` may be null.
inline void CountQuotaRefusal(Metrics* metrics, const ClientIdentity& client,
                              const absl::Status& status) {
  if (metrics == nullptr || status.code() != absl::StatusCode::kResourceExhausted) return;
  absl::string_view message = status.message();
  if (!absl::ConsumePrefix(&message, "quota ")) return;
  metrics->RecordClientRejection(client.name, message.substr(0, message.find_first_of(" :")));
}

// `make(limits)` (a MakeJob) under the client's limits (CheckWithinQuota: RESOURCE_EXHAUSTED
// naming max_matrix_elements or max_permanent_n for a request over the client's quota only), the
// job marked as the client's.
template <typename Make>
absl::StatusOr<JobSpec> MakeJobWithinQuota(const Limits& server_limits,
                                           const ClientIdentity& client, Make make) {
  absl::StatusOr<JobSpec> spec = CheckWithinQuota(server_limits, client, make);
  if (spec.ok()) {
    spec->owner = client.name;
    spec->owner_max_jobs = client.quota.max_jobs;
  }
  return spec;
}

// The call's deadline as a job deadline (gRPC says "none" with the largest time point).
inline absl::Time DeadlineOf(const grpc::ServerContextBase& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// The job of one call. The owner (a reactor, or a completion-queue call) holds the request and
// the response for as long as the call lives, and sends the status that SendStatus receives,
// exactly once per call.
template <typename Request, typename Response>
class JobCall {
 public:
  JobCall(const JobCall&) = delete;
  JobCall& operator=(const JobCall&) = delete;

 protected:
  // `rpc` is a string literal; `request` and `response` are borrowed by the job until it ends.
  JobCall(const char* rpc, const Request& request, Response* response)
      : rpc_(rpc), request_(request), response_(response) {}
  virtual ~JobCall() = default;

  // Sends the call's status; called once, from Start or from the job's on_finished hook. The
  // owner may be gone as soon as it returns.
  virtual void SendStatus(const grpc::Status& status) = 0;

  // Queues the job of the call on `services` (the caller's). From here on SendStatus will be
  // called exactly once: now when the request is refused or runs inline, else when the job ends.
  // Called once.
  void Start(const grpc::ServerContextBase& context, JobCallServices services) {
    services_.emplace(std::move(services));
    const absl::Status refused = Guarded(rpc_, [&]() -> absl::Status {
      // A draining server refuses before validating: the answer is the same for any request.
      if (absl::Status open = services_->scheduler.accepting(); !open.ok()) return open;
      absl::StatusOr<JobSpec> spec =
          MakeJobWithinQuota(services_->limits, *services_->client, [&](const Limits& limits) {
            return MakeJob(request_, response_, services_->backend, limits, services_->resident,
                           services_->shared_memory, services_->client.get());
          });
      if (!spec.ok()) return spec.status();
      if (context.IsCancelled()) return absl::CancelledError("the call was cancelled");
      spec->deadline = DeadlineOf(context);
      spec->runs_on_host = spec->runs_on_host || services_->backend.ComputesOnHost();
      spec->on_finished = [this](const absl::Status& status) { JobEnded(status); };
      // Refused or queued, from here on the hook finishes the call.
      absl::StatusOr<std::shared_ptr<Job>> job =
          services_->scheduler.Submit(*std::move(spec), /*remember=*/false);
      if (job.ok()) job_ = *std::move(job);
      return absl::OkStatus();
    });
    if (!refused.ok()) {
      CountQuotaRefusal(services_->metrics, *services_->client, refused);
      FinishOnce(ToGrpcStatus(refused));
    }
  }

  // The client cancelled or the deadline passed. REQUIRES: Start has returned.
  void Cancel() {
    const std::shared_ptr<Job> job = job_;
    if (job == nullptr) return;  // refused: the call is finished already
    // A client whose deadline passes cancels the stream itself, and that can arrive before the
    // server's own copy of the deadline (set on arrival from the grpc-timeout header, so later by
    // the transit): a cancellation this close to the deadline is the deadline's.
    constexpr absl::Duration kDeadlineTolerance = absl::Milliseconds(50);
    services_->scheduler.Cancel(*job,
                                absl::Now() + kDeadlineTolerance >= job->deadline()
                                    ? absl::DeadlineExceededError("the call's deadline passed")
                                    : absl::CancelledError("the call was cancelled"));
  }

 private:
  // The job's on_finished hook: on a worker, the housekeeper, or in Start or Cancel.
  void JobEnded(const absl::Status& job_status) {
    CountQuotaRefusal(services_->metrics, *services_->client, job_status);
    const absl::Status status = Guarded(rpc_, [&]() -> absl::Status {
      if (!job_status.ok()) return job_status;
      const size_t response_bytes = response_->ByteSizeLong();
      if (response_bytes > static_cast<size_t>(services_->max_response_bytes)) {
        return TooLargeResponse(response_bytes);
      }
      if (services_->metrics != nullptr) {
        services_->metrics->RecordTransfer("in", "inline", request_.ByteSizeLong(),
                                           absl::ZeroDuration());
        services_->metrics->RecordTransfer("out", "inline", response_bytes, absl::ZeroDuration());
      }
      return absl::OkStatus();
    });
    FinishOnce(ToGrpcStatus(status));
  }

  // A result too large for one message: what was kept of it is released (the client never sees
  // its handles) and the error says how to get it instead.
  absl::Status TooLargeResponse(size_t response_bytes) {
    if constexpr (requires { response_->kept(); }) {
      if (services_->resident != nullptr) {
        for (const auto& [name, kept] : response_->kept()) {
          static_cast<void>(services_->resident->Release(kept.handle(), services_->client->name));
        }
      }
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "the ", rpc_, " response would be ", response_bytes, " bytes, over the server's ",
        services_->max_response_bytes,
        "-byte message limit (--max_message_bytes); set result_options.keep_result (without "
        "also_inline) and fetch the result with Download, which streams it in chunks"));
  }

  // The owner may be deleted as soon as SendStatus returns.
  void FinishOnce(const grpc::Status& status) {
    if (!finished_.exchange(true)) SendStatus(status);
  }

  const char* const rpc_;
  std::optional<JobCallServices> services_;  // set by Start
  const Request& request_;
  Response* const response_;
  std::shared_ptr<Job> job_;  // null until queued (and when refused)
  std::atomic<bool> finished_{false};
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_CALL_H_
