// libFuzzer target: ParseMatrixMarket must turn any text into a matrix or an error, never a crash.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "client/matrix_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)matrixd::ParseMatrixMarket(absl::string_view(reinterpret_cast<const char*>(data), size),
                                   "fuzz.mtx");
  return 0;
}
