// The token file and the authenticator (server/client_auth.h): parsing, quotas, unknown and missing
// tokens, reload (revocation).
#include "server/client_auth.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace matrixd::server {
namespace {

constexpr Limits kServerLimits{.max_elements = 1 << 20, .max_permanent_n = 30};

// A token file in the test's temporary directory, rewritten by Write.
class TokenFile {
 public:
  TokenFile()
      : path_(::testing::TempDir() + "/tokens_" + std::to_string(getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  ~TokenFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) const { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TokenFile, ParsesNamesTokensQuotasAndComments) {
  absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(
      "# matrixd clients\n"
      "\n"
      "alice s3cret-a max_jobs=4 max_resident_bytes=1GiB  # the analytics team\n"
      "bob\ts3cret-b max_permanent_n=20 max_matrix_elements=1000 max_shm_regions=2\n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "alice");
  EXPECT_EQ((*entries)[0].quota.max_jobs, 4);
  EXPECT_EQ((*entries)[0].quota.max_resident_bytes, uint64_t{1} << 30);
  EXPECT_EQ((*entries)[1].name, "bob");
  EXPECT_EQ((*entries)[1].quota.max_permanent_n, 20);
  EXPECT_EQ((*entries)[1].quota.max_matrix_elements, 1000);
  EXPECT_EQ((*entries)[1].quota.max_shm_regions, 2);
}

TEST(TokenFile, BadLinesAreRefusedNamingTheLine) {
  const auto message = [](const std::string& text) {
    absl::StatusOr<std::vector<TokenEntry>> entries = ParseTokenFile(text);
    EXPECT_FALSE(entries.ok());
    return std::string(entries.status().message());
  };
  EXPECT_NE(message("alice\n").find("line 1"), std::string::npos);
  EXPECT_NE(message("a t1\nb t2 max_jobs=zero\n").find("line 2"), std::string::npos);
  EXPECT_NE(message("a t1 colour=red\n").find("unknown quota"), std::string::npos);
  EXPECT_NE(message("a t1\na t2\n").find("named twice"), std::string::npos);
  EXPECT_NE(message("a t1\nb t1\n").find("another client's token"), std::string::npos);
}

TEST(ClientAuthenticator, WithoutTokenFileEveryCallIsTheAnonymousClient) {
  const ClientAuthenticator authenticator(kServerLimits, {.max_jobs = 3});
  EXPECT_FALSE(authenticator.requires_token());
  for (const char* header : {"", "Bearer whatever"}) {
    absl::StatusOr<std::shared_ptr<const ClientIdentity>> client =
        authenticator.Authenticate(header);
    ASSERT_TRUE(client.ok()) << client.status();
    EXPECT_EQ((*client)->name, "");
    EXPECT_EQ((*client)->quota.max_jobs, 3);
  }
}

TEST(ClientAuthenticator, KnownTokenNamesItsClientWithItsQuotaAndLimits) {
  TokenFile file;
  file.Write("alice tok-a max_permanent_n=12\nbob tok-b max_matrix_elements=99999999\n");
  absl::StatusOr<std::unique_ptr<ClientAuthenticator>> authenticator =
      ClientAuthenticator::FromFile(file.path(), kServerLimits, {.max_jobs = 8});
  ASSERT_TRUE(authenticator.ok()) << authenticator.status();
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> alice =
      (*authenticator)->Authenticate("Bearer tok-a");
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ((*alice)->name, "alice");
  EXPECT_EQ((*alice)->quota.max_jobs, 8);  // from the defaults
  EXPECT_EQ((*alice)->limits.max_permanent_n, 12);
  EXPECT_EQ((*alice)->limits.max_elements, kServerLimits.max_elements);
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> bob =
      (*authenticator)->Authenticate("Bearer tok-b");
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_EQ((*bob)->name, "bob");
  // A quota above the server's limit does not raise it.
  EXPECT_EQ((*bob)->limits.max_elements, kServerLimits.max_elements);
}

TEST(ClientAuthenticator, MissingMalformedOrUnknownTokenIsUnauthenticated) {
  TokenFile file;
  file.Write("alice tok-a\n");
  absl::StatusOr<std::unique_ptr<ClientAuthenticator>> authenticator =
      ClientAuthenticator::FromFile(file.path(), kServerLimits, {});
  ASSERT_TRUE(authenticator.ok()) << authenticator.status();
  for (const char* header :
       {"", "tok-a", "Basic tok-a", "Bearer tok-b", "Bearer tok-", "Bearer "}) {
    EXPECT_EQ((*authenticator)->Authenticate(header).status().code(),
              absl::StatusCode::kUnauthenticated)
        << header;
  }
}

TEST(ClientAuthenticator, ReloadRevokesRemovedTokensAndKeepsTheTableOnABadFile) {
  TokenFile file;
  file.Write("alice tok-a\nbob tok-b\n");
  absl::StatusOr<std::unique_ptr<ClientAuthenticator>> authenticator =
      ClientAuthenticator::FromFile(file.path(), kServerLimits, {});
  ASSERT_TRUE(authenticator.ok()) << authenticator.status();
  ASSERT_TRUE((*authenticator)->Authenticate("Bearer tok-b").ok());

  file.Write("alice tok-a\ncarol tok-c\n");
  absl::StatusOr<int> clients = (*authenticator)->Reload();
  ASSERT_TRUE(clients.ok()) << clients.status();
  EXPECT_EQ(*clients, 2);
  EXPECT_EQ((*authenticator)->Authenticate("Bearer tok-b").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE((*authenticator)->Authenticate("Bearer tok-c").ok());

  file.Write("broken\n");
  EXPECT_EQ((*authenticator)->Reload().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*authenticator)->Authenticate("Bearer tok-c").ok());
}

TEST(ClientAuthenticator, MissingFileIsAnError) {
  EXPECT_FALSE(
      ClientAuthenticator::FromFile("/nonexistent/matrixd-tokens", kServerLimits, {}).ok());
}

}  // namespace
}  // namespace matrixd::server
