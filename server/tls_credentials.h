// The credentials of the gRPC port: plaintext, TLS, or mutual TLS. TLS certificates are watched:
// gRPC's FileWatcherCertificateProvider reads the key, the certificate chain and the client CA
// bundle again every `refresh_interval`, so a rotated certificate (a renewed Kubernetes Secret,
// cert-manager) is served to new connections without a restart.
#ifndef MATRIXD_SERVER_TLS_CREDENTIALS_H_
#define MATRIXD_SERVER_TLS_CREDENTIALS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace matrixd::server {

struct TlsOptions {
  std::string cert_path = {};  // PEM certificate chain; empty with key_path: plaintext
  std::string key_path = {};   // PEM private key
  // PEM CA bundle: when set, clients must present a certificate it signed.
  std::string client_ca_path = {};
  absl::Duration refresh_interval = absl::Minutes(1);

  bool enabled() const { return !cert_path.empty() || !key_path.empty(); }
  bool mutual() const { return !client_ca_path.empty(); }
};

// Insecure credentials when !options.enabled(), else TLS (mutual when options.mutual()).
// INVALID_ARGUMENT for a certificate without a key (or the reverse), a client CA without a
// certificate, a refresh interval under one second, or a file that cannot be read or holds no PEM
// block (checked once here: the watcher itself only logs such errors).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_TLS_CREDENTIALS_H_
