#include "server/metrics_interceptor.h"

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace matrixd::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(Metrics* metrics, const char* method)
      : metrics_(metrics), start_(absl::Now()) {
    // "/matrixd.v1.MatrixService/Determinant" -> "matrixd.v1.MatrixService/Determinant", kept
    // by Metrics: `method` may not outlive the call's context, and a copy per call costs an
    // allocation.
    absl::string_view name = method != nullptr ? method : "";
    absl::ConsumePrefix(&name, "/");
    method_ = metrics_->RpcMethodName(name);
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
  absl::string_view method_;
  bool recorded_ = false;
};

}  // namespace

grpc::experimental::Interceptor* RpcMetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(metrics_, info->method());
}

}  // namespace matrixd::server
