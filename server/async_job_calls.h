// The computing calls (Determinant, Factorize, Solve, Multiply, Permanent) on gRPC's
// completion-queue API: a set of ServerCompletionQueues, each polled by a thread of its own, so
// that the thread that reads a request also queues its job, runs it when it runs inline, and sends
// its response, without the hop through gRPC's shared callback-API threads. Each call is a JobCall
// (server/job_call.h): the same validation, quota, job, cancellation and response-size limit as
// the callback API's JobCallReactor. The other methods of matrixd.v1.MatrixService stay on the
// callback API: one service object with both kinds of methods (MatrixService::
// ServeOnCompletionQueues), so that it is registered, and listed by reflection, once.
//
// Lifecycle: construct before ServerBuilder::BuildAndStart (it adds its queues to the builder),
// Start after, Shutdown after grpc::Server::Shutdown (it waits until every call has ended, then
// shuts the queues down, drains them and joins the threads).
#ifndef MATRIXD_SERVER_ASYNC_JOB_CALLS_H_
#define MATRIXD_SERVER_ASYNC_JOB_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "matrixd/v1/matrixd.grpc.pb.h"
#include "server/matrix_service.h"

namespace matrixd::server {

// The methods served on the completion-queue API.
inline constexpr const char* kAsyncJobCallMethods[] = {"Determinant", "Factorize", "Solve",
                                                       "Multiply", "Permanent"};

// The index of the method `rpc` of matrixd.v1.MatrixService in its generated service (the order
// of the proto). REQUIRES: the service has such a method.
int MatrixServiceMethodIndex(absl::string_view rpc);

class AsyncJobCalls {
 public:
  // Serves the computing calls of `service` (which must outlive this, and serve them on
  // completion queues: ServeOnCompletionQueues) on `threads` completion queues of `builder` (0:
  // one per hardware thread). The service itself is registered by its owner.
  AsyncJobCalls(MatrixService& service, grpc::ServerBuilder& builder, int threads);
  // Shutdown.
  ~AsyncJobCalls();
  AsyncJobCalls(const AsyncJobCalls&) = delete;
  AsyncJobCalls& operator=(const AsyncJobCalls&) = delete;

  // After the server is built: asks for the first calls on every queue and starts the threads.
  void Start();
  // After grpc::Server::Shutdown: waits until every call has ended (their jobs too), then stops
  // the queues and joins their threads. A second call returns at once.
  void Shutdown();

  int threads() const { return static_cast<int>(queues_.size()); }

  // For the calls (async_job_calls.cc): what they are served by, and their count.
  MatrixService& matrix_service() { return matrix_service_; }
  std::atomic<int64_t>& live_calls() { return live_calls_; }

 private:
  MatrixService& matrix_service_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  // Calls asked for and not yet deleted: the queues stop only when none is left.
  std::atomic<int64_t> live_calls_{0};
  bool shut_down_ = false;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_ASYNC_JOB_CALLS_H_
