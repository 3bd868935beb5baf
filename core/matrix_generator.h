// Matrices made where they will be used (the Generate RPC), so that large inputs need no upload:
// seeded random, identity, Hilbert. The random entries are a pure function of (seed, row, col), so
// any chunking or device computes the same matrix.
#ifndef MATRIXD_CORE_MATRIX_GENERATOR_H_
#define MATRIXD_CORE_MATRIX_GENERATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/resident_matrix.h"

namespace matrixd {

enum class GeneratorKind { kRandom, kIdentity, kHilbert };

struct GeneratorOptions {
  GeneratorKind kind = GeneratorKind::kRandom;
  uint64_t seed = 0;
};

// The entries: kRandom uniform in [-1, 1) (real and imaginary parts; INT64 in [-9, 9], UINT32 in
// [0, 2^16)), kIdentity 1 on the diagonal, kHilbert 1 / (i + j + 1).
// INVALID_ARGUMENT for kHilbert of an integer dtype.
absl::Status CheckGenerator(const GeneratorOptions& options, DType dtype);

// Writes the whole matrix, a block of rows at a time, through ResidentMatrix::Write (on a device:
// one host-to-device copy per block, nothing over the network), then Flush. Errors of
// CheckGenerator and of Write.
absl::Status GenerateInto(ResidentMatrix& matrix, const GeneratorOptions& options);

}  // namespace matrixd

#endif  // MATRIXD_CORE_MATRIX_GENERATOR_H_
