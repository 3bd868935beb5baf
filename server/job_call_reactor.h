// The reactor of a computing call (Determinant, Factorize, Multiply, Permanent) on the gRPC
// callback API. The handler validates the request and queues its job, then returns; the job's
// on_finished hook finishes the call on the worker that ran it, or at once when the job is
// refused or dropped unrun. When the client cancels or the call's deadline passes, OnCancel
// cancels the job (a queued one ends at once, a running one at its backend's next check). No
// thread waits for the job.
#ifndef MATRIXD_SERVER_JOB_CALL_REACTOR_H_
#define MATRIXD_SERVER_JOB_CALL_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
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

template <typename Request, typename Response>
class JobCallReactor final : public grpc::ServerUnaryReactor {
 public:
  // Queues the job of the call `rpc` (a string literal) and returns the reactor that finishes the
  // call with its result. `request` and `response` are the call's: the job borrows them, and
  // gRPC keeps them until the reactor is done, which is after the job has ended.
  static grpc::ServerUnaryReactor* Start(const char* rpc, const JobCallServices& services,
                                         grpc::CallbackServerContext* context,
                                         const Request* request, Response* response) {
    auto* reactor = new JobCallReactor(rpc, services, *request, response);
    reactor->Submit(*context);
    return reactor;
  }

  void OnCancel() override {
    // job_ was set before the handler returned the reactor, and gRPC calls OnCancel only after.
    const std::shared_ptr<Job> job = job_;
    if (job == nullptr) return;  // refused: the call is finished already
    services_.scheduler.Cancel(*job, absl::Now() >= job->deadline()
                                         ? absl::DeadlineExceededError("the call's deadline passed")
                                         : absl::CancelledError("the call was cancelled"));
  }

  void OnDone() override { delete this; }

 private:
  JobCallReactor(const char* rpc, const JobCallServices& services, const Request& request,
                 Response* response)
      : rpc_(rpc), services_(services), request_(request), response_(response) {}

  void Submit(const grpc::CallbackServerContext& context) {
    const absl::Status refused = Guarded(rpc_, [&]() -> absl::Status {
      // A draining server refuses before validating: the answer is the same for any request.
      if (absl::Status open = services_.scheduler.accepting(); !open.ok()) return open;
      absl::StatusOr<JobSpec> spec =
          MakeJobWithinQuota(services_.limits, *services_.client, [&](const Limits& limits) {
            return MakeJob(request_, response_, services_.backend, limits, services_.resident,
                           services_.shared_memory, services_.client.get());
          });
      if (!spec.ok()) return spec.status();
      if (context.IsCancelled()) return absl::CancelledError("the call was cancelled");
      spec->deadline = DeadlineOf(context);
      spec->runs_on_host = spec->runs_on_host || services_.backend.ComputesOnHost();
      spec->on_finished = [this](const absl::Status& status) { JobEnded(status); };
      // Refused or queued, from here on the hook finishes the call.
      absl::StatusOr<std::shared_ptr<Job>> job =
          services_.scheduler.Submit(*std::move(spec), /*remember=*/false);
      if (job.ok()) job_ = *std::move(job);
      return absl::OkStatus();
    });
    if (!refused.ok()) {
      CountQuotaRefusal(services_.metrics, *services_.client, refused);
      FinishOnce(ToGrpcStatus(refused));
    }
  }

  // The job's on_finished hook: on a worker, the housekeeper, or in Submit or Cancel.
  void JobEnded(const absl::Status& job_status) {
    CountQuotaRefusal(services_.metrics, *services_.client, job_status);
    const absl::Status status = Guarded(rpc_, [&]() -> absl::Status {
      if (!job_status.ok()) return job_status;
      const size_t response_bytes = response_->ByteSizeLong();
      if (response_bytes > static_cast<size_t>(services_.max_response_bytes)) {
        return TooLargeResponse(response_bytes);
      }
      if (services_.metrics != nullptr) {
        services_.metrics->RecordTransfer("in", "inline", request_.ByteSizeLong(),
                                          absl::ZeroDuration());
        services_.metrics->RecordTransfer("out", "inline", response_bytes, absl::ZeroDuration());
      }
      return absl::OkStatus();
    });
    FinishOnce(ToGrpcStatus(status));
  }

  // A result too large for one message: what was kept of it is released (the client never sees
  // its handles) and the error says how to get it instead.
  absl::Status TooLargeResponse(size_t response_bytes) {
    if constexpr (requires { response_->kept(); }) {
      if (services_.resident != nullptr) {
        for (const auto& [name, kept] : response_->kept()) {
          static_cast<void>(services_.resident->Release(kept.handle(), services_.client->name));
        }
      }
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "the ", rpc_, " response would be ", response_bytes, " bytes, over the server's ",
        services_.max_response_bytes,
        "-byte message limit (--max_message_bytes); set result_options.keep_result (without "
        "also_inline) and fetch the result with Download, which streams it in chunks"));
  }

  // The reactor may be deleted as soon as Finish returns.
  void FinishOnce(const grpc::Status& status) {
    if (!finished_.exchange(true)) Finish(status);
  }

  const char* const rpc_;
  const JobCallServices services_;
  const Request& request_;
  Response* const response_;
  std::shared_ptr<Job> job_;  // null until queued (and when refused)
  std::atomic<bool> finished_{false};
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_CALL_REACTOR_H_
