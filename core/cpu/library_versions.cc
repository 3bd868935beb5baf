#include "core/cpu/library_versions.h"

#include "absl/strings/ascii.h"
#include "core/cpu/lapack_types.h"

namespace matrixd::cpu {

std::vector<std::pair<std::string, std::string>> CpuLibraryVersions() {
  // The loaded library's own report, not the header's macro: what actually ran.
  const char* config = openblas_get_config();
  return {{"openblas", config != nullptr ? std::string(absl::StripAsciiWhitespace(config)) : ""}};
}

}  // namespace matrixd::cpu
