#include "server/metrics_interceptor.h"

#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace matrixd::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(Metrics* metrics, const char* method)
      : metrics_(metrics), start_(absl::Now()) {
    // "/matrixd.v1.MatrixService/Determinant" -> "matrixd.v1.MatrixService/Determinant".
    method_ = method != nullptr ? method : "";
    if (!method_.empty() && method_.front() == '/') method_.erase(0, 1);
  }

  // A call torn down without sending a status (the client went away first) counts as CANCELLED,
  // which is what the client saw.
  ~RpcMetricsInterceptor() override {
    if (!recorded_)
      metrics_->RecordRpc(method_, absl::StatusCode::kCancelled, absl::Now() - start_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      // grpc::StatusCode and absl::StatusCode are both the canonical google.rpc.Code values.
      const grpc::Status status = methods->GetSendStatus();
      metrics_->RecordRpc(method_, static_cast<absl::StatusCode>(status.error_code()),
                          absl::Now() - start_);
      recorded_ = true;
    }
    methods->Proceed();
  }

 private:
  Metrics* metrics_;
  absl::Time start_;
  std::string method_;
  bool recorded_ = false;
};

}  // namespace

grpc::experimental::Interceptor* RpcMetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(metrics_, info->method());
}

}  // namespace matrixd::server
