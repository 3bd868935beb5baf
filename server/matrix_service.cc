#include "server/matrix_service.h"

#include <chrono>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/job.h"
#include "server/job_update.h"
#include "server/request_jobs.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

// How often a waiting synchronous call looks whether its client is still there. The synchronous
// API has no callback for a cancelled call, and this bounds how long a cancelled call's queued job
// lingers (a running one then stops at its backend's next check).
constexpr absl::Duration kCancellationPoll = absl::Milliseconds(20);

// Runs one handler body. Protobuf, gRPC and the standard library may throw (allocation above
// all); a throw must not take the server down, so it becomes a status here.
template <typename Body>
grpc::Status Guarded(const char* rpc, Body&& body) {
  try {
    return ToGrpcStatus(body());
  } catch (const std::bad_alloc&) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::StrCat(rpc, ": out of memory"));
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, ": ", e.what()));
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, ": unknown exception"));
  }
}

absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  // gRPC says "no deadline" with the largest time point.
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// Waits for a synchronous call's job. When the client cancels or the call's deadline passes, the
// job is cancelled (a queued one ends at once) and this still waits for it to end: the job
// borrows the call's request and response.
absl::Status AwaitJob(Scheduler& scheduler, Job& job, grpc::ServerContext& context) {
  while (!job.AwaitFinished(absl::Now() + kCancellationPoll)) {
    if (context.IsCancelled()) {
      scheduler.Cancel(job, absl::Now() >= job.deadline()
                                ? absl::DeadlineExceededError("the call's deadline passed")
                                : absl::CancelledError("the call was cancelled"));
      job.AwaitFinished(absl::InfiniteFuture());
      break;
    }
  }
  return job.status();
}

absl::StatusOr<std::shared_ptr<Job>> FindJob(const Scheduler& scheduler, const v1::JobId& request) {
  if (request.job_id().empty()) return absl::InvalidArgumentError("job_id is empty");
  return scheduler.Find(request.job_id());
}

}  // namespace

template <typename Request, typename Response>
grpc::Status MatrixService::RunAndWait(const char* rpc, grpc::ServerContext* context,
                                       const Request& request, Response* response) {
  return Guarded(rpc, [&]() -> absl::Status {
    absl::StatusOr<JobSpec> spec = MakeJob(request, response, backend_, limits_, resident_);
    if (!spec.ok()) return spec.status();
    if (context->IsCancelled()) return absl::CancelledError("the call was cancelled");
    spec->deadline = DeadlineOf(*context);
    absl::StatusOr<std::shared_ptr<Job>> job =
        scheduler_.Submit(*std::move(spec), /*remember=*/false);
    if (!job.ok()) return job.status();
    absl::Status status = AwaitJob(scheduler_, **job, *context);
    if (status.ok() && metrics_ != nullptr) {
      metrics_->RecordTransfer("in", "inline", request.ByteSizeLong(), absl::ZeroDuration());
      metrics_->RecordTransfer("out", "inline", response->ByteSizeLong(), absl::ZeroDuration());
    }
    return status;
  });
}

grpc::Status MatrixService::Determinant(grpc::ServerContext* context,
                                        const v1::DeterminantRequest* request,
                                        v1::DeterminantResponse* response) {
  return RunAndWait("Determinant", context, *request, response);
}

grpc::Status MatrixService::Factorize(grpc::ServerContext* context,
                                      const v1::FactorizeRequest* request,
                                      v1::FactorizeResponse* response) {
  return RunAndWait("Factorize", context, *request, response);
}

grpc::Status MatrixService::Multiply(grpc::ServerContext* context,
                                     const v1::MultiplyRequest* request,
                                     v1::MultiplyResponse* response) {
  return RunAndWait("Multiply", context, *request, response);
}

grpc::Status MatrixService::Permanent(grpc::ServerContext* context,
                                      const v1::PermanentRequest* request,
                                      v1::PermanentResponse* response) {
  return RunAndWait("Permanent", context, *request, response);
}

grpc::Status MatrixService::Submit(grpc::ServerContext* /*context*/, const v1::JobRequest* request,
                                   v1::JobHandle* response) {
  return Guarded("Submit", [&]() -> absl::Status {
    absl::StatusOr<JobSpec> spec = MakeJob(*request, backend_, limits_, absl::Now(), resident_);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<std::shared_ptr<Job>> job =
        scheduler_.Submit(*std::move(spec), /*remember=*/true);
    if (!job.ok()) return job.status();
    response->set_job_id((*job)->id());
    return absl::OkStatus();
  });
}

grpc::Status MatrixService::Watch(grpc::ServerContext* context, const v1::JobId* request,
                                  grpc::ServerWriter<v1::JobUpdate>* writer) {
  return Guarded("Watch", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    bool sent = false;
    v1::JobState sent_state = v1::JOB_STATE_UNSPECIFIED;
    double sent_progress = 0.0;
    for (;;) {
      const JobSnapshot snapshot = (*job)->Snapshot();
      const v1::JobUpdate update = ToJobUpdate(**job, snapshot);
      if (!sent || update.state() != sent_state || update.progress() != sent_progress) {
        if (!writer->Write(update)) return absl::CancelledError("the watcher went away");
        sent = true;
        sent_state = update.state();
        sent_progress = update.progress();
      }
      if (IsFinished(snapshot.state)) return absl::OkStatus();
      // Ending a Watch leaves the job running; Cancel stops it.
      if (context->IsCancelled()) return absl::CancelledError("the Watch call was cancelled");
      (*job)->AwaitStateOtherThan(snapshot.state, absl::Now() + watch_interval_);
    }
  });
}

grpc::Status MatrixService::Cancel(grpc::ServerContext* /*context*/, const v1::JobId* request,
                                   v1::JobUpdate* response) {
  return Guarded("Cancel", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    scheduler_.Cancel(**job, absl::CancelledError("cancelled by a Cancel call"));
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

grpc::Status MatrixService::GetJob(grpc::ServerContext* /*context*/, const v1::JobId* request,
                                   v1::JobUpdate* response) {
  return Guarded("GetJob", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

}  // namespace matrixd::server
