#include "server/matrix_service.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "server/async_job_calls.h"
#include "server/guarded.h"
#include "server/job.h"
#include "server/job_update.h"
#include "server/refused_reactor.h"
#include "server/request_jobs.h"
#include "server/status_conversion.h"
#include "server/watch_reactor.h"

namespace matrixd::server {
namespace {

absl::StatusOr<std::shared_ptr<Job>> FindJob(const Scheduler& scheduler, const v1::JobId& request,
                                             const ClientIdentity& client) {
  if (request.job_id().empty()) return absl::InvalidArgumentError("job_id is empty");
  return scheduler.Find(request.job_id(), client.name);
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

absl::StatusOr<std::shared_ptr<const ClientIdentity>> MatrixService::Identify(
    const grpc::ServerContextBase& context) const {
  const auto& headers = context.client_metadata();
  const auto header = headers.find("authorization");
  const absl::string_view authorization =
      header == headers.end() ? absl::string_view()
                              : absl::string_view(header->second.data(), header->second.size());
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client =
      authenticator_->Authenticate(authorization);
  if (!client.ok() && metrics_ != nullptr) {
    metrics_->RecordClientRejection("unknown", "unauthenticated");
  }
  return client;
}

void MatrixService::ServeOnCompletionQueues(absl::Span<const char* const> rpcs) {
  for (const char* rpc : rpcs) {
    const int method = MatrixServiceMethodIndex(rpc);
    // A callback method marked async keeps its callback handler (gRPC 1.51), and the server
    // would take it for a callback method: drop the handler first. Without one it is async.
    MarkMethodCallback(method, nullptr);
    MarkMethodAsync(method);
  }
}

absl::Status MatrixService::CountRejection(const ClientIdentity& client,
                                           absl::Status status) const {
  CountQuotaRefusal(metrics_, client, status);
  return status;
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* MatrixService::StartJobCall(const char* rpc,
                                                      grpc::CallbackServerContext* context,
                                                      const Request* request, Response* response) {
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return new RefusedReactor<grpc::ServerUnaryReactor>(client.status());
  return JobCallReactor<Request, Response>::Start(rpc, job_call_services(*std::move(client)),
                                                  context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Determinant(grpc::CallbackServerContext* context,
                                                     const v1::DeterminantRequest* request,
                                                     v1::DeterminantResponse* response) {
  return StartJobCall("Determinant", context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Factorize(grpc::CallbackServerContext* context,
                                                   const v1::FactorizeRequest* request,
                                                   v1::FactorizeResponse* response) {
  return StartJobCall("Factorize", context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Solve(grpc::CallbackServerContext* context,
                                               const v1::SolveRequest* request,
                                               v1::SolveResponse* response) {
  return StartJobCall("Solve", context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Multiply(grpc::CallbackServerContext* context,
                                                  const v1::MultiplyRequest* request,
                                                  v1::MultiplyResponse* response) {
  return StartJobCall("Multiply", context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Permanent(grpc::CallbackServerContext* context,
                                                   const v1::PermanentRequest* request,
                                                   v1::PermanentResponse* response) {
  return StartJobCall("Permanent", context, request, response);
}

grpc::ServerUnaryReactor* MatrixService::Submit(grpc::CallbackServerContext* context,
                                                const v1::JobRequest* request,
                                                v1::JobHandle* response) {
  return AnswerNow(context, "Submit", [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    if (absl::Status open = scheduler_.accepting(); !open.ok()) return open;
    const absl::Time now = absl::Now();
    absl::StatusOr<JobSpec> spec = MakeJobWithinQuota(limits_, *client, [&](const Limits& limits) {
      return MakeJob(*request, backend_, limits, now, resident_, shared_memory_, client.get());
    });
    if (!spec.ok()) return CountRejection(*client, spec.status());
    absl::StatusOr<std::shared_ptr<Job>> job =
        scheduler_.Submit(*std::move(spec), /*remember=*/true);
    if (!job.ok()) return CountRejection(*client, job.status());
    response->set_job_id((*job)->id());
    return absl::OkStatus();
  });
}

grpc::ServerWriteReactor<v1::JobUpdate>* MatrixService::Watch(grpc::CallbackServerContext* context,
                                                              const v1::JobId* request) {
  grpc::ServerWriteReactor<v1::JobUpdate>* reactor = nullptr;
  const absl::Status status = Guarded("Watch", [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request, *client);
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
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request, *client);
    if (!job.ok()) return job.status();
    scheduler_.Cancel(**job, absl::CancelledError("cancelled by a Cancel call"));
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* MatrixService::GetJob(grpc::CallbackServerContext* context,
                                                const v1::JobId* request, v1::JobUpdate* response) {
  return AnswerNow(context, "GetJob", [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<const ClientIdentity> client, Identify(*context));
    absl::StatusOr<std::shared_ptr<Job>> job = FindJob(scheduler_, *request, *client);
    if (!job.ok()) return job.status();
    *response = ToJobUpdate(**job);
    return absl::OkStatus();
  });
}

}  // namespace matrixd::server
