#include "tests/soak/process_memory.h"

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace matrixd::soak {

absl::StatusOr<int64_t> ResidentSetBytes(int64_t pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/status") : absl::StrCat("/proc/", pid, "/status");
  std::ifstream status(path);
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmRSS:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    int64_t kib = 0;
    if (absl::ConsumeSuffix(&rest, "kB") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) {
      return kib * 1024;
    }
    break;
  }
  return absl::NotFoundError(absl::StrCat("no VmRSS line in ", path));
}

}  // namespace matrixd::soak
