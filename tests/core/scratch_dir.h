// Scratch folders for tests that write files (checkpoints): a fresh, empty path per test process,
// and a count of the files in it.
#ifndef MATRIXD_TESTS_CORE_SCRATCH_DIR_H_
#define MATRIXD_TESTS_CORE_SCRATCH_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace matrixd::testing {

// TempDir()/name-PID, removed if it was left by an earlier run (not created).
inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// The entries of `dir`; 0 when it does not exist.
inline int FilesIn(const std::string& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++count;
  return count;
}

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_SCRATCH_DIR_H_
