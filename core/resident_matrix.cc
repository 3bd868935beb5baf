#include "core/resident_matrix.h"

#include "absl/strings/str_cat.h"

namespace matrixd {

absl::Status ResidentMatrix::CheckRange(uint64_t offset, uint64_t bytes) const {
  const uint64_t size = byte_size();
  if (offset > size || bytes > size - offset) {
    return absl::InvalidArgumentError(absl::StrCat("bytes [", offset, ", ", offset + bytes,
                                                   ") are outside the matrix's ", size, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ResidentMatrix::GenerateInPlace(const GeneratorOptions& /*options*/,
                                             const GeneratedRows& /*rows*/) {
  return absl::UnimplementedError("this resident matrix is not generated in place");
}

}  // namespace matrixd
