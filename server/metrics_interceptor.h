// A gRPC server interceptor that times every RPC, from the arrival of its metadata to the status
// it ends with, into Metrics::RecordRpc. Covers every service on the server (MatrixService, health,
// reflection) without touching their handlers.
#ifndef MATRIXD_SERVER_METRICS_INTERCEPTOR_H_
#define MATRIXD_SERVER_METRICS_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include "server/metrics.h"

namespace matrixd::server {

class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `metrics` must outlive every RPC of the server.
  explicit RpcMetricsInterceptorFactory(Metrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  Metrics* metrics_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_METRICS_INTERCEPTOR_H_
