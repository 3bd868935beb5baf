#include "server/matrix_service.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/guarded.h"
#include "server/job.h"
#include "server/job_update.h"
#include "server/refused_reactor.h"
#include "server/request_jobs.h"
#include "server/status_conversion.h"
#include "server/watch_reactor.h"

namespace matrixd::server {
namespace {

absl::StatusOr<std::shared_ptr<Job>> FindJob(const Scheduler& scheduler, const v1::JobId& request) {
  if (request.job_id().empty()) return absl::InvalidArgumentError("job_id is empty");
  return scheduler.Find(request.job_id());
}

// Answers a unary call at once with what `body` returns (see Guarded).
template <typename Body>
grpc::ServerUnaryReactor* AnswerNow(grpc::CallbackServerContext* context, const char* rpc,
                                    Body&& body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(Guarded(rpc, std::forward<Body>(body))));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* MatrixService::Determinant(grpc::CallbackServerContext* context,
                                                     const v1::DeterminantRequest* request,
                                                     v1::DeterminantResponse* response) {
  return JobCallReactor<v1::DeterminantRequest, v1::DeterminantResponse>::Start(
      "Determinant", job_call_services(), context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Factorize(grpc::CallbackServerContext* context,
                                                   const v1::FactorizeRequest* request,
                                                   v1::FactorizeResponse* response) {
  return JobCallReactor<v1::FactorizeRequest, v1::FactorizeResponse>::Start(
      "Factorize", job_call_services(), context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Solve(grpc::CallbackServerContext* context,
                                               const v1::SolveRequest* request,
                                               v1::SolveResponse* response) {
  return JobCallReactor<v1::SolveRequest, v1::SolveResponse>::Start("Solve", job_call_services(),
                                                                    context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Multiply(grpc::CallbackServerContext* context,
                                                  const v1::MultiplyRequest* request,
                                                  v1::MultiplyResponse* response) {
  return JobCallReactor<v1::MultiplyRequest, v1::MultiplyResponse>::Start(
      "Multiply", job_call_services(), context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Permanent(grpc::CallbackServerContext* context,
                                                   const v1::PermanentRequest* request,
                                                   v1::PermanentResponse* response) {
  return JobCallReactor<v1::PermanentRequest, v1::PermanentResponse>::Start(
      "Permanent", job_call_services(), context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Submit(grpc::CallbackServerContext* context,
                                                const v1::JobRequest* request,
                                                v1::JobHandle* response) {
  return AnswerNow(context, "Submit", [&]() -> absl::Status {
    if (absl::Status open = scheduler_.accepting(); !open.ok()) return open;
    absl::StatusOr<JobSpec> spec =
        MakeJob(*request, backend_, limits_, absl::Now(), resident_, shared_memory_);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<std::shared_ptr<Job>> job =
        scheduler_.Submit(*std::move(spec), /*remember=*/true);
    if (!job.ok()) return job.status();
    response->set_job_id((*job)->id());
    return absl::OkStatus();
  });
}

grpc::ServerWriteReactor<v1::JobUpdate>* MatrixService::Watch(
    grpc::CallbackServerContext* /*context*/, const v1::JobId* request) {
  grpc::ServerWriteReactor<v1::JobUpdate>* reactor = nullptr;
  const absl::Status status = Guarded("Watch", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    // Ending a Watch leaves the job running; Cancel stops it.
    reactor = new WatchReactor(*std::move(job), watch_interval_);
    return absl::OkStatus();
  });
  if (reactor != nullptr) return reactor;
  return new RefusedReactor<grpc::ServerWriteReactor<v1::JobUpdate>>(status);
}

grpc::ServerUnaryReactor* MatrixService::Cancel(grpc::CallbackServerContext* context,
                                                const v1::JobId* request, v1::JobUpdate* response) {
  return AnswerNow(context, "Cancel", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    scheduler_.Cancel(**job, absl::CancelledError("cancelled by a Cancel call"));
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* MatrixService::GetJob(grpc::CallbackServerContext* context,
                                                const v1::JobId* request, v1::JobUpdate* response) {
  return AnswerNow(context, "GetJob", [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request);
    if (!job.ok()) return job.status();
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

}  // namespace matrixd::server
