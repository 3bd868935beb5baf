#include "server/metrics_http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd::server {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", address, "\" has no port; want HOST:PORT"));
  }
  absl::string_view host = address.substr(0, colon);
  const absl::string_view port_text = address.substr(colon + 1);
  int port = -1;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics address \"", address, "\": port \"",
                                                   port_text, "\" is not in [0, 65535]"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address \"", address, "\": write an IPv6 host in brackets, e.g. [::]:9464"));
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(std::string(host), port);
}

MetricsHttpServer::MetricsHttpServer() : http_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    absl::string_view address, Metrics* metrics) {
  if (metrics == nullptr) return absl::InvalidArgumentError("no metrics given");
  MATRIXD_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(address));
  const auto& [host, port] = host_port;

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->http_->Get("/metrics", [metrics](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics->Serialize(), kContentType);
  });
  // No exception may leave a handler thread: report it as a 500 instead.
  server->http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        response.status = 500;
        response.set_content("matrixd: rendering the metrics failed\n", "text/plain");
      });
  // Without SO_REUSEPORT (httplib's default socket options set it) a second server could share
  // the port silently; SO_REUSEADDR alone still allows a quick restart.
  server->http_->set_socket_options([](int socket) {
    int one = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  });
  const int bound = port == 0 ? server->http_->bind_to_any_port(host)
                              : (server->http_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for metrics on \"", address, "\""));
  }
  server->port_ = bound;
  server->address_ = absl::StrCat(
      host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host, ":", bound);
  httplib::Server* http = server->http_.get();
  server->listener_ = std::thread([http] { http->listen_after_bind(); });
  // stop() is a no-op until the listener runs; wait for it so that the destructor cannot miss it.
  for (int i = 0; i < 2000 && !http->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!http->is_running()) {
    // The listener ended at once (it could not accept); it returned, so the join is quick.
    server->listener_.join();
    return absl::UnavailableError(
        absl::StrCat("the metrics listener on \"", address, "\" did not start"));
  }
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (listener_.joinable()) {
    http_->stop();
    listener_.join();
  }
}

}  // namespace matrixd::server
