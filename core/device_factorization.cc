#include "core/device_factorization.h"

#include "absl/strings/str_cat.h"
#include "core/distributed_resident_matrix.h"

namespace matrixd {

absl::Status DeviceFactorization::Write(uint64_t /*offset*/, std::span<const std::byte> /*bytes*/) {
  return absl::FailedPreconditionError(
      absl::StrCat("the ", rows(), "x", cols(),
                   " factorization kept on the GPUs is made by Factorize and not written"));
}

MatrixView DeviceFactorization::view() const { return PartsView(*this); }

}  // namespace matrixd
