#include "server/async_job_calls.h"

#include <google/protobuf/descriptor.h>
#include <grpc/support/log.h>
#include <pthread.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/job_call.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

// Calls asked for at a time, per method and queue: a new one is asked for as soon as one arrives,
// so more only cover bursts that arrive before the queue's thread gets to it.
constexpr int kCallsAskedPerMethod = 4;

// One call in flight on a completion queue. Its tags are the addresses of its Events; every tag of
// a call comes back on the queue it was asked for on, so its thread alone runs Proceed.
class AsyncCall {
 public:
  enum class Step { kArrived, kDone, kSent };
  struct Event {
    AsyncCall* call;
    Step step;
  };

  virtual ~AsyncCall() = default;
  virtual void Proceed(Step step, bool ok) = 0;
};

// The request and the response of a call: a base of AsyncJobCall, so that they are built before the
// JobCall that borrows them.
template <typename Request, typename Response>
struct CallMessages {
  Request request;
  Response response;
};

template <typename Request, typename Response>
class AsyncJobCall final : private CallMessages<Request, Response>,
                           public AsyncCall,
                           private JobCall<Request, Response> {
 public:
  // Asks for the next call of `method` (named `rpc`, a string literal) on `queue`.
  static void AskFor(AsyncJobCalls& calls, const char* rpc, int method,
                     grpc::ServerCompletionQueue* queue) {
    auto* call = new AsyncJobCall(calls, rpc, method, queue);
    calls.live_calls().fetch_add(1, std::memory_order_relaxed);
    call->context_.AsyncNotifyWhenDone(&call->done_);
    calls.matrix_service().RequestCall(method, &call->context_, &call->request, &call->responder_,
                                       queue, &call->arrived_);
  }

  void Proceed(Step step, bool ok) override {
    switch (step) {
      case Step::kArrived:
        if (!ok) {  // the server shuts down: no call came, and no other tag will
          Delete();
          return;
        }
        AskFor(calls_, rpc_, method_, queue_);
        Serve();
        return;
      case Step::kDone:
        // Before the done tag a call on this API cannot tell it was cancelled, so Start's own
        // check passes and the job is cancelled here instead.
        if (context_.IsCancelled()) this->Cancel();
        Ended();
        return;
      case Step::kSent:
        Ended();
        return;
    }
  }

 private:
  AsyncJobCall(AsyncJobCalls& calls, const char* rpc, int method,
               grpc::ServerCompletionQueue* queue)
      : JobCall<Request, Response>(rpc, this->request, &this->response),
        calls_(calls),
        rpc_(rpc),
        method_(method),
        queue_(queue) {}

  void Serve() {
    absl::StatusOr<JobCallServices> services = calls_.matrix_service().JobCallServicesFor(context_);
    if (!services.ok()) {
      SendStatus(ToGrpcStatus(services.status()));
      return;
    }
    this->Start(context_, *std::move(services));
  }

  // From Start or the job's on_finished hook, on any thread. The kSent tag comes back on queue_.
  void SendStatus(const grpc::Status& status) override {
    responder_.Finish(this->response, status, &sent_);
  }

  // The done and the sent tags both come back once the call has arrived.
  void Ended() {
    if (--tags_left_ == 0) Delete();
  }

  void Delete() {
    std::atomic<int64_t>& live = calls_.live_calls();
    delete this;
    live.fetch_sub(1, std::memory_order_release);
  }

  AsyncJobCalls& calls_;
  const char* const rpc_;
  const int method_;
  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  grpc::ServerAsyncResponseWriter<Response> responder_{&context_};
  Event arrived_{this, Step::kArrived};
  Event done_{this, Step::kDone};
  Event sent_{this, Step::kSent};
  int tags_left_ = 2;  // only queue_'s thread counts
};

// Asks for kCallsAskedPerMethod calls of every method on `queue`.
void AskForCalls(AsyncJobCalls& calls, grpc::ServerCompletionQueue* queue) {
  for (int i = 0; i < kCallsAskedPerMethod; ++i) {
    AsyncJobCall<v1::DeterminantRequest, v1::DeterminantResponse>::AskFor(
        calls, "Determinant", MatrixServiceMethodIndex("Determinant"), queue);
    AsyncJobCall<v1::FactorizeRequest, v1::FactorizeResponse>::AskFor(
        calls, "Factorize", MatrixServiceMethodIndex("Factorize"), queue);
    AsyncJobCall<v1::SolveRequest, v1::SolveResponse>::AskFor(
        calls, "Solve", MatrixServiceMethodIndex("Solve"), queue);
    AsyncJobCall<v1::MultiplyRequest, v1::MultiplyResponse>::AskFor(
        calls, "Multiply", MatrixServiceMethodIndex("Multiply"), queue);
    AsyncJobCall<v1::PermanentRequest, v1::PermanentResponse>::AskFor(
        calls, "Permanent", MatrixServiceMethodIndex("Permanent"), queue);
  }
}

// matrixd.v1.MatrixService in the proto's descriptors, linked in with matrixd_proto.
const google::protobuf::ServiceDescriptor& MatrixServiceDescriptor() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::MatrixService::service_full_name());
  GPR_ASSERT(service != nullptr);
  return *service;
}

// Runs queue `index`'s tags until it is shut down and drained.
void Poll(grpc::ServerCompletionQueue* queue, int index) {
  // Named so that per-thread CPU reports (tests/gpu/coalesce-run.sh) tell them from gRPC's.
  pthread_setname_np(pthread_self(), absl::StrCat("matrixd-cq-", index).c_str());
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    const auto* event = static_cast<const AsyncCall::Event*>(tag);
    event->call->Proceed(event->step, ok);
  }
}

}  // namespace

int MatrixServiceMethodIndex(absl::string_view rpc) {
  const google::protobuf::MethodDescriptor* method =
      MatrixServiceDescriptor().FindMethodByName(std::string(rpc));
  GPR_ASSERT(method != nullptr);
  return method->index();
}

AsyncJobCalls::AsyncJobCalls(MatrixService& service, grpc::ServerBuilder& builder, int threads)
    : matrix_service_(service) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < threads; ++i) {
    queues_.push_back(builder.AddCompletionQueue(/*is_frequently_polled=*/true));
  }
}

AsyncJobCalls::~AsyncJobCalls() { Shutdown(); }

void AsyncJobCalls::Start() {
  for (size_t i = 0; i < queues_.size(); ++i) {
    AskForCalls(*this, queues_[i].get());
    threads_.emplace_back(Poll, queues_[i].get(), static_cast<int>(i));
  }
}

void AsyncJobCalls::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // The server is shut down, so every call asked for comes back: those that never arrived at
  // once, the others when their jobs end and their status is sent. None asks for another after.
  while (live_calls_.load(std::memory_order_acquire) > 0) absl::SleepFor(absl::Milliseconds(1));
  for (const auto& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  // Queues whose thread never started (the server failed to start) are drained here.
  if (threads_.empty()) {
    for (const auto& queue : queues_) {
      void* tag = nullptr;
      bool ok = false;
      while (queue->Next(&tag, &ok)) {
      }
    }
  }
}

}  // namespace matrixd::server
