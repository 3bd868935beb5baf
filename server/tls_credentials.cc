#include "server/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace matrixd::server {
namespace {

absl::Status CheckPemFile(const char* flag, const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::stringstream text;
  text << file.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" holds no PEM block (-----BEGIN ...)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options) {
  if (!options.enabled()) {
    if (options.mutual()) {
      return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (options.cert_path.empty() || options.key_path.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (options.refresh_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--tls_refresh_interval must be >= 1s");
  }
  if (absl::Status ok = CheckPemFile("--tls_cert", options.cert_path); !ok.ok()) return ok;
  if (absl::Status ok = CheckPemFile("--tls_key", options.key_path); !ok.ok()) return ok;
  if (options.mutual()) {
    if (absl::Status ok = CheckPemFile("--tls_client_ca", options.client_ca_path); !ok.ok()) {
      return ok;
    }
  }
  const auto refresh_seconds =
      static_cast<unsigned int>(absl::ToInt64Seconds(options.refresh_interval));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options.key_path, options.cert_path, options.client_ca_path, refresh_seconds);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (options.mutual()) {
    tls.watch_root_certs();
    tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(tls);
}

}  // namespace matrixd::server
