// Security end to end (issue 11): the real server on a loopback port, with TLS, mutual TLS and
// tokens, against real clients. TLS certificates are made at test time with openssl (skipped
// without it).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/test_certificates.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

using ::testing::HasSubstr;

v1::DeterminantRequest SmallDeterminant() {
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0});
  return request;
}

ServerOptions SecureOptions(const TlsOptions& tls,
                            std::shared_ptr<ClientAuthenticator> authenticator = nullptr) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.limits = TestLimits();
  options.tls = tls;
  options.authenticator = std::move(authenticator);
  return options;
}

std::unique_ptr<MatrixServer> StartServer(
    const TlsOptions& tls, std::shared_ptr<ClientAuthenticator> authenticator = nullptr) {
  absl::StatusOr<std::unique_ptr<MatrixServer>> server = MatrixServer::Start(
      MakeCpuBackend({.threads = 1}), SecureOptions(tls, std::move(authenticator)));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

ClientOptions Quick(ClientOptions options = {}) {
  options.deadline = absl::Seconds(10);
  return options;
}

// ---- TLS and mutual TLS ----

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certificates_ = MakeTestCertificates(::testing::TempDir()); }
  static void TearDownTestSuite() {
    if (certificates_.has_value()) std::filesystem::remove_all(certificates_->dir);
  }
  void SetUp() override {
    if (!certificates_.has_value()) GTEST_SKIP() << "no openssl to make test certificates";
  }
  static const TestCertificates& certs() { return *certificates_; }

  static TlsOptions ServerTls() {
    return {.cert_path = certs().Path("server.pem"), .key_path = certs().Path("server.key")};
  }

  static ClientTls TrustingCa(const std::string& ca = "ca.pem") {
    return {.root_certs_pem = certs().Read(ca)};
  }

 private:
  static inline std::optional<TestCertificates> certificates_;
};

TEST_F(TlsTest, TlsClientIsServedAndPlaintextClientIsRefused) {
  std::unique_ptr<MatrixServer> server = StartServer(ServerTls());
  ASSERT_NE(server, nullptr);

  Client tls_client(server->address(), Quick({.tls = TrustingCa()}));
  absl::StatusOr<v1::DeterminantResponse> answer = tls_client.Determinant(SmallDeterminant());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_NEAR(answer->value(), 5.0, 1e-14);

  Client plaintext(server->address(), Quick());
  EXPECT_EQ(plaintext.Determinant(SmallDeterminant()).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, ComputingCallsOnCompletionQueuesKeepTls) {
  ServerOptions options = SecureOptions(ServerTls());
  options.computing_calls = ServerOptions::ComputingCalls::kAsync;
  options.cq_threads = 1;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  ASSERT_TRUE(server.ok()) << server.status();
  for (const bool tls : {true, false}) {
    Client client((*server)->address(), tls ? Quick({.tls = TrustingCa()}) : Quick());
    EXPECT_EQ(client.Determinant(SmallDeterminant()).status().code(),
              tls ? absl::StatusCode::kOk : absl::StatusCode::kUnavailable)
        << (tls ? "TLS" : "plaintext");
  }
}

TEST_F(TlsTest, ServerNameOverrideMatchesTheCertificate) {
  std::unique_ptr<MatrixServer> server = StartServer(ServerTls());
  ASSERT_NE(server, nullptr);
  ClientTls named = TrustingCa();
  named.server_name = "localhost";
  Client right(server->address(), Quick({.tls = named}));
  EXPECT_TRUE(right.Determinant(SmallDeterminant()).ok());
  named.server_name = "not-this-server.example";
  Client wrong(server->address(), Quick({.tls = named}));
  EXPECT_EQ(wrong.Determinant(SmallDeterminant()).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, ServerCertificateFromAnotherCaIsRefused) {
  std::unique_ptr<MatrixServer> server = StartServer(ServerTls());
  ASSERT_NE(server, nullptr);
  Client client(server->address(), Quick({.tls = TrustingCa("other-ca.pem")}));
  EXPECT_EQ(client.Determinant(SmallDeterminant()).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, MutualTlsServesOnlyClientsWithAValidCertificateOfItsCa) {
  std::unique_ptr<MatrixServer> server = StartServer({.cert_path = certs().Path("server.pem"),
                                                      .key_path = certs().Path("server.key"),
                                                      .client_ca_path = certs().Path("ca.pem")});
  ASSERT_NE(server, nullptr);

  ClientTls with_certificate = TrustingCa();
  with_certificate.cert_chain_pem = certs().Read("client.pem");
  with_certificate.private_key_pem = certs().Read("client.key");
  Client good(server->address(), Quick({.tls = with_certificate}));
  absl::StatusOr<v1::DeterminantResponse> answer = good.Determinant(SmallDeterminant());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_NEAR(answer->value(), 5.0, 1e-14);

  Client without_certificate(server->address(), Quick({.tls = TrustingCa()}));
  EXPECT_EQ(without_certificate.Determinant(SmallDeterminant()).status().code(),
            absl::StatusCode::kUnavailable);

  ClientTls foreign = TrustingCa();
  foreign.cert_chain_pem = certs().Read("other-client.pem");
  foreign.private_key_pem = certs().Read("other-client.key");
  Client stranger(server->address(), Quick({.tls = foreign}));
  EXPECT_EQ(stranger.Determinant(SmallDeterminant()).status().code(),
            absl::StatusCode::kUnavailable);

  ClientTls expired = TrustingCa();
  expired.cert_chain_pem = certs().Read("expired-client.pem");
  expired.private_key_pem = certs().Read("expired-client.key");
  Client late(server->address(), Quick({.tls = expired}));
  EXPECT_EQ(late.Determinant(SmallDeterminant()).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, BadCertificateFilesAreRefusedAtStart) {
  for (const TlsOptions& bad : {
           TlsOptions{.cert_path = certs().Path("server.pem")},
           TlsOptions{.cert_path = certs().Path("missing.pem"),
           .key_path = certs().Path("server.key")},
           TlsOptions{.cert_path = certs().Path("server.ext"),  // no PEM block in it
                      .key_path = certs().Path("server.key")},
       }) {
    EXPECT_EQ(
        MatrixServer::Start(MakeCpuBackend({.threads = 1}), SecureOptions(bad)).status().code(),
        absl::StatusCode::kInvalidArgument)
        << bad.cert_path;
  }
}

// ---- Tokens, ownership and quotas ----

class TokenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokens_path_ = absl::StrCat(::testing::TempDir(), "/matrixd-tokens-", getpid());
    WriteTokens(
        "# test clients\n"
        "alice tok-alice max_permanent_n=5 max_resident_bytes=4KiB\n"
        "bob tok-bob max_jobs=2\n"
        "carol tok-carol\n"
        "dave tok-dave max_matrix_elements=100\n");
    absl::StatusOr<std::unique_ptr<ClientAuthenticator>> authenticator =
        ClientAuthenticator::FromFile(tokens_path_, TestLimits(), {});
    ASSERT_TRUE(authenticator.ok()) << authenticator.status();
    server_ = StartServer({}, *std::move(authenticator)).release();
    ASSERT_NE(server_, nullptr);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    std::remove(tokens_path_.c_str());
  }
  static void WriteTokens(const std::string& text) { std::ofstream(tokens_path_) << text; }
  static MatrixServer& server() { return *server_; }
  static std::unique_ptr<Client> As(const std::string& token) {
    return std::make_unique<Client>(server_->address(), Quick({.token = token}));
  }

 private:
  static inline MatrixServer* server_ = nullptr;
  static inline std::string tokens_path_;
};

TEST_F(TokenTest, MissingOrUnknownTokenIsUnauthenticatedButHealthStaysOpen) {
  for (const std::string token : {"", "tok-nobody"}) {
    std::unique_ptr<Client> client = As(token);
    const absl::Status status = client->Determinant(SmallDeterminant()).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << token;
    EXPECT_EQ(client->ListMatrices().status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->GetJob("0123").status().code(), absl::StatusCode::kUnauthenticated);
    absl::StatusOr<bool> healthy = client->Healthy();
    ASSERT_TRUE(healthy.ok()) << healthy.status();
    EXPECT_TRUE(*healthy);
  }
  EXPECT_THAT(server().metrics().Serialize(),
              HasSubstr("matrixd_client_rejections_total{client=\"unknown\",reason=\""
                        "unauthenticated\"}"));
  absl::StatusOr<v1::DeterminantResponse> answer = As("tok-carol")->Determinant(SmallDeterminant());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_NEAR(answer->value(), 5.0, 1e-14);
}

TEST_F(TokenTest, AnotherClientsResidentMatrixIsNotFound) {
  std::unique_ptr<Client> alice = As("tok-alice");
  std::unique_ptr<Client> bob = As("tok-bob");
  absl::StatusOr<RemoteMatrix> matrix =
      alice->Upload(MakeMatrix<double>(2, 2, {4.0, 1.0, 2.0, 3.0}));
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  const std::string handle = matrix->handle();

  EXPECT_EQ(bob->Download(handle).status().code(), absl::StatusCode::kNotFound);
  v1::DeterminantRequest by_handle;
  by_handle.mutable_matrix_ref()->set_handle(handle);
  EXPECT_EQ(bob->Determinant(by_handle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->Release(handle).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::ListMatricesResponse> bobs = bob->ListMatrices();
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  EXPECT_EQ(bobs->matrices_size(), 0);

  // Still alice's, untouched.
  absl::StatusOr<v1::DeterminantResponse> answer = alice->Determinant(by_handle);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_NEAR(answer->value(), 10.0, 1e-13);
  absl::StatusOr<v1::ListMatricesResponse> alices = alice->ListMatrices();
  ASSERT_TRUE(alices.ok()) << alices.status();
  ASSERT_EQ(alices->matrices_size(), 1);
  EXPECT_EQ(alices->matrices(0).handle(), handle);
  EXPECT_EQ(alices->limit_bytes(), 4096u);  // her quota, under the server's limit
}

TEST_F(TokenTest, AnotherClientsJobIsNotFound) {
  std::unique_ptr<Client> alice = As("tok-alice");
  std::unique_ptr<Client> bob = As("tok-bob");
  v1::JobRequest request;
  *request.mutable_determinant() = SmallDeterminant();
  absl::StatusOr<std::string> id = alice->Submit(request);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(bob->GetJob(*id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->Cancel(*id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->Watch(*id).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::JobUpdate> done = alice->Watch(*id);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_NEAR(done->determinant().value(), 5.0, 1e-14);
}

TEST_F(TokenTest, QuotasAreResourceExhaustedNamingTheQuota) {
  std::unique_ptr<Client> alice = As("tok-alice");
  // max_permanent_n=5: a 6x6 permanent is within the server's limit (12) but not hers.
  v1::PermanentRequest permanent;
  *permanent.mutable_matrix() = MakeMatrix<double>(6, 6, std::vector<double>(36, 1.0));
  const absl::Status over_n = alice->Permanent(permanent).status();
  EXPECT_EQ(over_n.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over_n.message()), HasSubstr("max_permanent_n"));
  // Another client may.
  absl::StatusOr<v1::PermanentResponse> carols = As("tok-carol")->Permanent(permanent);
  ASSERT_TRUE(carols.ok()) << carols.status();
  EXPECT_NEAR(carols->value(), 720.0, 1e-9);

  // max_resident_bytes=4KiB: a 30x30 float64 matrix (7200 bytes) does not fit.
  const absl::Status over_bytes =
      alice->Upload(MakeMatrix<double>(30, 30, std::vector<double>(900, 1.0))).status();
  EXPECT_EQ(over_bytes.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over_bytes.message()), HasSubstr("max_resident_bytes"));
  EXPECT_THAT(server().metrics().Serialize(),
              HasSubstr("matrixd_client_rejections_total{client=\"alice\",reason=\""
                        "max_permanent_n\"}"));
}

// max_matrix_elements=100 bounds the matrices dave makes resident as it bounds his operands: an
// 11 x 10 one is within the server's limit (65536) but not his.
TEST_F(TokenTest, ResidentMatrixOverTheElementQuotaIsResourceExhaustedAndKeepsNothing) {
  std::unique_ptr<Client> dave = As("tok-dave");
  const v1::Matrix over = MakeMatrix<double>(11, 10, std::vector<double>(110, 1.0));
  v1::GenerateRequest generate;
  generate.set_rows(11);
  generate.set_cols(10);
  generate.set_dtype(v1::DTYPE_FLOAT64);
  generate.set_generator(v1::GENERATOR_IDENTITY);
  const absl::Status refused[] = {
      dave->Upload(over, {.parallel_streams = 1}).status(),
      dave->Upload(over, {.parallel_streams = 2, .parallel_min_bytes = 0})
          .status(),  // CreateMatrix
      dave->Generate(generate).status()};
  for (const absl::Status& status : refused) {
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_THAT(std::string(status.message()),
                ::testing::AllOf(HasSubstr("quota max_matrix_elements of client \"dave\""),
                                 HasSubstr("11 x 10 = 110 elements"),
                                 HasSubstr("max_matrix_elements = 100")));
  }
  absl::StatusOr<v1::ListMatricesResponse> listed = dave->ListMatrices();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->matrices_size(), 0);
  EXPECT_EQ(listed->resident_bytes(), 0u);
  EXPECT_THAT(server().metrics().Serialize(),
              HasSubstr("matrixd_client_rejections_total{client=\"dave\",reason=\""
                        "max_matrix_elements\"} 3"));

  // At his limit, each is made.
  const v1::Matrix at_limit = MakeMatrix<double>(10, 10, std::vector<double>(100, 1.0));
  absl::StatusOr<RemoteMatrix> streamed = dave->Upload(at_limit, {.parallel_streams = 1});
  EXPECT_TRUE(streamed.ok()) << streamed.status();
  absl::StatusOr<RemoteMatrix> in_parts =
      dave->Upload(at_limit, {.parallel_streams = 2, .parallel_min_bytes = 0});
  EXPECT_TRUE(in_parts.ok()) << in_parts.status();
  generate.set_rows(10);
  absl::StatusOr<v1::ResidentMatrix> generated = dave->Generate(generate);
  ASSERT_TRUE(generated.ok()) << generated.status();
  EXPECT_TRUE(dave->Release(generated->handle()).ok());
}

TEST_F(TokenTest, TokenRemovedFromTheFileIsRefusedAfterReload) {
  std::unique_ptr<Client> carol = As("tok-carol");
  ASSERT_TRUE(carol->Determinant(SmallDeterminant()).ok());
  WriteTokens(
      "alice tok-alice max_permanent_n=5 max_resident_bytes=4KiB\n"
      "bob tok-bob max_jobs=2\n");
  absl::StatusOr<int> clients = server().ReloadTokens();
  ASSERT_TRUE(clients.ok()) << clients.status();
  EXPECT_EQ(*clients, 2);
  EXPECT_EQ(carol->Determinant(SmallDeterminant()).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(As("tok-bob")->Determinant(SmallDeterminant()).ok());
  // Restored for the other tests.
  WriteTokens(
      "alice tok-alice max_permanent_n=5 max_resident_bytes=4KiB\n"
      "bob tok-bob max_jobs=2\n"
      "carol tok-carol\n");
  ASSERT_TRUE(server().ReloadTokens().ok());
}

}  // namespace
}  // namespace matrixd::server::testing
