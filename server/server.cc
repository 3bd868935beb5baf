#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace matrixd::server {
namespace {

// "host:port" -> "host"; keeps IPv6 brackets ("[::]:0" -> "[::]").
absl::string_view HostOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || address.find(']', colon) != absl::string_view::npos) {
    return address;
  }
  return address.substr(0, colon);
}

}  // namespace

MatrixServer::MatrixServer(std::unique_ptr<Backend> backend, const Limits& limits)
    : backend_(std::move(backend)), service_(*backend_, limits) {}

absl::StatusOr<std::unique_ptr<MatrixServer>> MatrixServer::Start(std::unique_ptr<Backend> backend,
                                                                  const ServerOptions& options) {
  if (backend == nullptr) return absl::InvalidArgumentError("no backend given");
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes is ", options.max_message_bytes, "; want > 0"));
  }
  // Both are process-wide switches read by the ServerBuilder; setting them again is harmless.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<MatrixServer> server(new MatrixServer(std::move(backend), options.limits));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
  // Without this a second server on a busy port would silently share it (SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(&server->service_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on \"", options.listen_address, "\""));
  }
  server->address_ = absl::StrCat(HostOf(options.listen_address), ":", server->port_);

  grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService();
  health->SetServingStatus(true);  // the overall status, service ""
  health->SetServingStatus(kMatrixServiceName, true);
  return server;
}

MatrixServer::~MatrixServer() {
  Shutdown();
  Wait();
}

void MatrixServer::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&shutdown_mutex_);
    if (shut_down_ || server_ == nullptr) return;
    shut_down_ = true;
  }
  // Health watchers see NOT_SERVING first, then the server stops taking calls.
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->GetHealthCheckService()->Shutdown();
  const std::chrono::system_clock::time_point deadline =
      std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace);
  server_->Shutdown(deadline);
}

void MatrixServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace matrixd::server
