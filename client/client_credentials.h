// How a client proves who it talks to and who it is: TLS toward the server (its CA, and for mutual
// TLS a client certificate) and the bearer token of a server with --auth_tokens. The PEM texts and
// the token live in ClientOptions (client/client.h); these read them from files and the
// environment, as matrixctl's --tls_ca, --tls_cert, --tls_key, --tls_server_name, --token,
// --token_file and MATRIXD_TOKEN do.
#ifndef MATRIXD_CLIENT_CLIENT_CREDENTIALS_H_
#define MATRIXD_CLIENT_CLIENT_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace matrixd {

// TLS toward the server, as PEM text.
struct ClientTls {
  std::string root_certs_pem =
      {};  // the CA that signed the server's certificate; empty: the system's
  std::string cert_chain_pem = {};   // the client's certificate (mutual TLS); empty: none
  std::string private_key_pem = {};  // its key
  // The name the server's certificate must carry when it is not the target's host (an address,
  // or a name behind a load balancer); empty: the target's host.
  std::string server_name = {};
};

// Reads the files (each may be empty: not given). INVALID_ARGUMENT naming the flag for a file that
// cannot be read, or a certificate without a key (or the reverse).
absl::StatusOr<ClientTls> ReadClientTls(const std::string& ca_path, const std::string& cert_path,
                                        const std::string& key_path,
                                        const std::string& server_name);

// The token: `token` when given, else the first line of `token_file` when given, else the
// environment variable MATRIXD_TOKEN, else empty (no token). INVALID_ARGUMENT for both flags at
// once, or a token file that cannot be read or is empty.
absl::StatusOr<std::string> ResolveToken(const std::string& token, const std::string& token_file);

// Channel credentials: TLS with `tls` when given, else plaintext.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const ClientTls* tls);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_CLIENT_CREDENTIALS_H_
