// libFuzzer target: ParseNpy must turn any bytes into a matrix or an error, never a crash.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "client/matrix_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)matrixd::ParseNpy(absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  return 0;
}
