#include "client/client_credentials.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace matrixd {
namespace {

absl::StatusOr<std::string> ReadFile(const char* flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream file(path);
  if (!file) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<ClientTls> ReadClientTls(const std::string& ca_path, const std::string& cert_path,
                                        const std::string& key_path,
                                        const std::string& server_name) {
  if (cert_path.empty() != key_path.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  ClientTls tls;
  tls.server_name = server_name;
  absl::StatusOr<std::string> ca = ReadFile("--tls_ca", ca_path);
  if (!ca.ok()) return ca.status();
  tls.root_certs_pem = *std::move(ca);
  absl::StatusOr<std::string> cert = ReadFile("--tls_cert", cert_path);
  if (!cert.ok()) return cert.status();
  tls.cert_chain_pem = *std::move(cert);
  absl::StatusOr<std::string> key = ReadFile("--tls_key", key_path);
  if (!key.ok()) return key.status();
  tls.private_key_pem = *std::move(key);
  return tls;
}

absl::StatusOr<std::string> ResolveToken(const std::string& token, const std::string& token_file) {
  if (!token.empty() && !token_file.empty()) {
    return absl::InvalidArgumentError("give --token or --token_file, not both");
  }
  if (!token.empty()) return token;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> text = ReadFile("--token_file", token_file);
    if (!text.ok()) return text.status();
    const absl::string_view first_line =
        absl::StripAsciiWhitespace(absl::string_view(*text).substr(0, text->find('\n')));
    if (first_line.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--token_file \"", token_file, "\" is empty"));
    }
    return std::string(first_line);
  }
  const char* from_environment = std::getenv("MATRIXD_TOKEN");
  return from_environment == nullptr ? std::string()
                                     : std::string(absl::StripAsciiWhitespace(from_environment));
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const ClientTls* tls) {
  if (tls == nullptr) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->root_certs_pem;
  options.pem_cert_chain = tls->cert_chain_pem;
  options.pem_private_key = tls->private_key_pem;
  return grpc::SslCredentials(options);
}

}  // namespace matrixd
