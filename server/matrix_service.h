// matrixd.v1.MatrixService on the gRPC callback API, on the scheduler (server/scheduler.h). Every
// request becomes a job: it is validated (INVALID_ARGUMENT before anything is queued), queued
// (RESOURCE_EXHAUSTED at once when the queue is full) and run by a worker. The four computing
// RPCs and Solve are finished by their job when it ends (server/job_call.h), and cancel it when
// the client cancels or its deadline passes; they are served here (server/job_call_reactor.h)
// unless ServeOnCompletionQueues puts them on the completion-queue API (server/async_job_calls.h,
// which asks for their calls through RequestCall: still this one service);
// Submit/Watch/Cancel/GetJob expose jobs by id. No thread is parked per call. No exception leaves a
// handler or a job: std::bad_alloc becomes RESOURCE_EXHAUSTED, any other std::exception INTERNAL.
//
// Clients: every call is first identified by the ClientAuthenticator (server/client_auth.h):
// UNAUTHENTICATED for a missing or unknown token when the server has a token file. Jobs, resident
// matrices and shared-memory regions belong to the client that made them; another client's id,
// handle or region name is NOT_FOUND, exactly as one that never existed. The client's quota
// applies (RESOURCE_EXHAUSTED naming it). The health and reflection services are not this
// service's and stay open.
#ifndef MATRIXD_SERVER_MATRIX_SERVICE_H_
#define MATRIXD_SERVER_MATRIX_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/backend.h"
#include "core/validation.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "server/client_auth.h"
#include "server/job_call_reactor.h"
#include "server/metrics.h"
#include "server/resident_registry.h"
#include "server/scheduler.h"
#include "server/shared_memory_registry.h"
#include "server/upload_assembler.h"

namespace matrixd::server {

class MatrixService final : public v1::MatrixService::CallbackService {
 public:
  // `backend`, `scheduler`, `resident` (may be null: no resident matrices) and `metrics` (may be
  // null) must outlive the service; the backend is called from the scheduler's workers, several
  // at once.
  MatrixService(Backend& backend, Scheduler& scheduler, const Limits& limits,
                ResidentRegistry* resident = nullptr, Metrics* metrics = nullptr)
      : backend_(backend),
        scheduler_(scheduler),
        limits_(limits),
        resident_(resident),
        metrics_(metrics) {}

  grpc::ServerUnaryReactor* Determinant(grpc::CallbackServerContext* context,
                                        const v1::DeterminantRequest* request,
                                        v1::DeterminantResponse* response) override;
  grpc::ServerUnaryReactor* Factorize(grpc::CallbackServerContext* context,
                                      const v1::FactorizeRequest* request,
                                      v1::FactorizeResponse* response) override;
  grpc::ServerUnaryReactor* Solve(grpc::CallbackServerContext* context,
                                  const v1::SolveRequest* request,
                                  v1::SolveResponse* response) override;
  grpc::ServerUnaryReactor* Multiply(grpc::CallbackServerContext* context,
                                     const v1::MultiplyRequest* request,
                                     v1::MultiplyResponse* response) override;
  grpc::ServerUnaryReactor* Permanent(grpc::CallbackServerContext* context,
                                      const v1::PermanentRequest* request,
                                      v1::PermanentResponse* response) override;

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context,
                                   const v1::JobRequest* request, v1::JobHandle* response) override;
  // Sends the current state at once, then each change of state as it happens and of progress at
  // most every watch_interval, and ends after the finished job's update (server/watch_reactor.h).
  grpc::ServerWriteReactor<v1::JobUpdate>* Watch(grpc::CallbackServerContext* context,
                                                 const v1::JobId* request) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* context, const v1::JobId* request,
                                   v1::JobUpdate* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context, const v1::JobId* request,
                                   v1::JobUpdate* response) override;

  // Resident matrices (server/resident_rpcs.cc). UNIMPLEMENTED without a registry.
  grpc::ServerReadReactor<v1::UploadChunk>* Upload(grpc::CallbackServerContext* context,
                                                   v1::ResidentMatrix* response) override;
  grpc::ServerWriteReactor<v1::DownloadChunk>* Download(
      grpc::CallbackServerContext* context, const v1::DownloadRequest* request) override;
  grpc::ServerUnaryReactor* ListMatrices(grpc::CallbackServerContext* context,
                                         const v1::ListMatricesRequest* request,
                                         v1::ListMatricesResponse* response) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* context,
                                    const v1::ReleaseRequest* request,
                                    v1::ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* Generate(grpc::CallbackServerContext* context,
                                     const v1::GenerateRequest* request,
                                     v1::ResidentMatrix* response) override;
  grpc::ServerUnaryReactor* CreateMatrix(grpc::CallbackServerContext* context,
                                         const v1::CreateMatrixRequest* request,
                                         v1::ResidentMatrix* response) override;

  // Client shared-memory regions (server/shared_memory_rpcs.cc; UNIMPLEMENTED without a
  // registry): operands and result targets in them.
  grpc::ServerUnaryReactor* RegisterSystemSharedMemory(
      grpc::CallbackServerContext* context, const v1::RegisterSystemSharedMemoryRequest* request,
      v1::RegisterSystemSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterSystemSharedMemory(
      grpc::CallbackServerContext* context, const v1::UnregisterSystemSharedMemoryRequest* request,
      v1::UnregisterSystemSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* RegisterCudaSharedMemory(
      grpc::CallbackServerContext* context, const v1::RegisterCudaSharedMemoryRequest* request,
      v1::RegisterCudaSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterCudaSharedMemory(
      grpc::CallbackServerContext* context, const v1::UnregisterCudaSharedMemoryRequest* request,
      v1::UnregisterCudaSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* ListSharedMemory(grpc::CallbackServerContext* context,
                                             const v1::ListSharedMemoryRequest* request,
                                             v1::ListSharedMemoryResponse* response) override;
  // `registry` must outlive the service; null (the default) refuses shared memory.
  void set_shared_memory(SharedMemoryRegistry* registry) { shared_memory_ = registry; }

  // Who calls come from; `authenticator` must outlive the service. Without one (the default)
  // every call is the anonymous client without a quota.
  void set_authenticator(const ClientAuthenticator* authenticator) {
    authenticator_ = authenticator;
  }

  // The services of a computing call from the caller of `context` (Identify): UNAUTHENTICATED
  // for a missing or unknown token, counted in the metrics.
  absl::StatusOr<JobCallServices> JobCallServicesFor(const grpc::ServerContextBase& context) {
    absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(context);
    if (!client.ok()) return client.status();
    return job_call_services(*std::move(client));
  }

  // Serves the methods named `rpcs` (e.g. "Determinant") on gRPC's completion-queue API instead
  // of the callback API: their calls come only through RequestCall (server/async_job_calls.h).
  // Call before the service is registered with a ServerBuilder.
  void ServeOnCompletionQueues(absl::Span<const char* const> rpcs);

  // After ServeOnCompletionQueues: asks for the next call of the method with index `method` on
  // `queue`; `tag` comes back on `queue` when one arrives (ok) or when the server shuts down (not
  // ok).
  template <typename Request, typename Response>
  void RequestCall(int method, grpc::ServerContext* context, Request* request,
                   grpc::ServerAsyncResponseWriter<Response>* responder,
                   grpc::ServerCompletionQueue* queue, void* tag) {
    RequestAsyncUnary(method, context, request, responder, queue, queue, tag);
  }

  // How often Watch looks at a running job's progress.
  void set_watch_interval(absl::Duration interval) { watch_interval_ = interval; }
  // Largest response a computing call may send (the server's max send message size); a larger
  // result is refused with RESOURCE_EXHAUSTED pointing to keep_result and Download.
  void set_max_response_bytes(int64_t bytes) { max_response_bytes_ = bytes; }

 private:
  // The checks of a call that makes a resident matrix (CreateMatrix, Generate): a registry, a
  // server not draining, a valid shape within `client`'s limits (CheckNewShape; errors naming
  // `rpc`).
  absl::StatusOr<UploadShape> CheckNewMatrix(int64_t rows, int64_t cols, v1::DType dtype,
                                             const char* rpc, const ClientIdentity& client);
  // CheckUploadShape under `client`'s limits, as the operands of computing calls
  // (CheckWithinQuota); a quota refusal is counted for `client`.
  absl::StatusOr<UploadShape> CheckNewShape(int64_t rows, int64_t cols, v1::DType dtype,
                                            const char* what, const ClientIdentity& client) const;
  // Identifies the caller and starts the computing call `rpc` (JobCallReactor).
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* StartJobCall(const char* rpc, grpc::CallbackServerContext* context,
                                         const Request* request, Response* response);
  // The client of a call (ClientAuthenticator::Authenticate of its authorization header); a
  // refusal is counted in the metrics.
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> Identify(
      const grpc::ServerContextBase& context) const;
  // `status`; a quota refusal (RESOURCE_EXHAUSTED "quota NAME...") is counted for `client`.
  absl::Status CountRejection(const ClientIdentity& client, absl::Status status) const;
  JobCallServices job_call_services(std::shared_ptr<const ClientIdentity> client) {
    return {backend_, scheduler_,          limits_,        resident_,
            metrics_, max_response_bytes_, shared_memory_, std::move(client)};
  }

  Backend& backend_;
  Scheduler& scheduler_;
  const Limits limits_;
  const ClientAuthenticator anonymous_{limits_, ClientQuota{}};
  const ClientAuthenticator* authenticator_ = &anonymous_;
  ResidentRegistry* const resident_;
  Metrics* const metrics_;
  SharedMemoryRegistry* shared_memory_ = nullptr;
  absl::Duration watch_interval_ = absl::Milliseconds(100);
  int64_t max_response_bytes_ = int64_t{1} << 30;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MATRIX_SERVICE_H_
