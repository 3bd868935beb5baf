// The reactor of a computing call (Determinant, Factorize, Solve, Multiply, Permanent) on the gRPC
// callback API: a JobCall (server/job_call.h) that finishes the call with Finish and cancels the
// job in OnCancel. No thread waits for the job.
#ifndef MATRIXD_SERVER_JOB_CALL_REACTOR_H_
#define MATRIXD_SERVER_JOB_CALL_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <utility>

#include "server/job_call.h"

namespace matrixd::server {

template <typename Request, typename Response>
class JobCallReactor final : public grpc::ServerUnaryReactor, private JobCall<Request, Response> {
 public:
  // Queues the job of the call `rpc` (a string literal) and returns the reactor that finishes the
  // call with its result. `request` and `response` are the call's: the job borrows them, and
  // gRPC keeps them until the reactor is done, which is after the job has ended.
  static grpc::ServerUnaryReactor* Start(const char* rpc, JobCallServices services,
                                         grpc::CallbackServerContext* context,
                                         const Request* request, Response* response) {
    auto* reactor = new JobCallReactor(rpc, *request, response);
    reactor->JobCall<Request, Response>::Start(*context, std::move(services));
    return reactor;
  }

  // The job was queued before the handler returned the reactor, and gRPC calls OnCancel only
  // after.
  void OnCancel() override { this->Cancel(); }

  void OnDone() override { delete this; }

 private:
  JobCallReactor(const char* rpc, const Request& request, Response* response)
      : JobCall<Request, Response>(rpc, request, response) {}

  void SendStatus(const grpc::Status& status) override { Finish(status); }
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_JOB_CALL_REACTOR_H_
