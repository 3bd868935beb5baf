#include "tests/multi_gpu/forked_ranks.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace matrixd::testing {
namespace {

bool WriteAll(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t bytes) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// In the child: take the token (rank 0 makes it and passes it on), then run the body.
int ChildMain(int rank, const std::vector<int>& write_ends, int read_end,
              const std::function<absl::StatusOr<std::string>()>& make_token,
              const std::function<int(int, const std::string&)>& body) {
  std::string token;
  if (rank == 0) {
    absl::StatusOr<std::string> made = make_token();
    if (!made.ok()) {
      std::fprintf(stderr, "rank 0: %s\n", made.status().ToString().c_str());
      return 1;
    }
    token = *std::move(made);
    const uint64_t size = token.size();
    for (int fd : write_ends) {
      if (!WriteAll(fd, &size, sizeof(size)) || !WriteAll(fd, token.data(), token.size())) {
        std::fprintf(stderr, "rank 0: could not pass the token on\n");
        return 1;
      }
      close(fd);
    }
  } else {
    uint64_t size = 0;
    if (!ReadAll(read_end, &size, sizeof(size)) || size > (1u << 20)) return 1;
    token.resize(size);
    if (!ReadAll(read_end, token.data(), size)) return 1;
    close(read_end);
  }
  return body(rank, token);
}

}  // namespace

int RunForkedRanks(int ranks, const std::function<absl::StatusOr<std::string>()>& make_token,
                   const std::function<int(int rank, const std::string& token)>& body) {
  // pipes[r] carries the token from rank 0 to rank r (r >= 1).
  std::vector<std::array<int, 2>> pipes(static_cast<size_t>(ranks));
  for (int r = 1; r < ranks; ++r) {
    if (pipe(pipes[r].data()) != 0) {
      std::perror("pipe");
      return 1;
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      for (pid_t child : children) kill(child, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the parent died before prctl
      std::vector<int> write_ends;
      int read_end = -1;
      for (int other = 1; other < ranks; ++other) {
        if (r == 0) {
          write_ends.push_back(pipes[other][1]);
        } else {
          close(pipes[other][1]);
        }
        if (other == r) {
          read_end = pipes[other][0];
        } else {
          close(pipes[other][0]);
        }
      }
      const int code = ChildMain(r, write_ends, read_end, make_token, body);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children.push_back(pid);
  }
  for (int r = 1; r < ranks; ++r) {
    close(pipes[r][0]);
    close(pipes[r][1]);
  }

  int result = 0;
  int running = ranks;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    --running;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      // The others would wait for the failed rank in NCCL forever.
      for (pid_t child : children) {
        if (child != pid) kill(child, SIGKILL);
      }
    }
  }
  return result;
}

}  // namespace matrixd::testing
