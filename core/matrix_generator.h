// Matrices made where they will be used (the Generate RPC), so that large inputs need no upload:
// seeded random, identity, Hilbert. The random entries are a pure function of (seed, row, col)
// (core/generator_entry.h, one definition for host and device), so any chunking, device or
// layout computes the same matrix.
#ifndef MATRIXD_CORE_MATRIX_GENERATOR_H_
#define MATRIXD_CORE_MATRIX_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "core/generator_entry.h"
#include "core/resident_matrix.h"

namespace matrixd {

// The entries: kRandom uniform in [-1, 1) (real and imaginary parts; INT64 in [-9, 9], UINT32 in
// [0, 2^16)), kIdentity 1 on the diagonal, kHilbert 1 / (i + j + 1).
// INVALID_ARGUMENT for kHilbert of an integer dtype.
absl::Status CheckGenerator(const GeneratorOptions& options, DType dtype);

// Writes the whole matrix, then Flush: where the matrix can make its entries in place
// (ResidentMatrix::GeneratesInPlace: a device kernel on the CUDA backend), there; otherwise on
// the host, a block of rows at a time through ResidentMatrix::Write. A distributed matrix has
// each of its parts written so (its global rows). Errors of CheckGenerator, GenerateInPlace and
// Write.
absl::Status GenerateInto(ResidentMatrix& matrix, const GeneratorOptions& options);

// The rows `rows` maps of a matrix with `cols` columns, generated on the host into `out`
// (rows * cols elements of `dtype`, row-major). Errors of CheckGenerator.
absl::Status GenerateOnHost(const GeneratorOptions& options, const GeneratedRows& rows,
                            int64_t local_rows, int64_t cols, DType dtype,
                            std::span<std::byte> out);

}  // namespace matrixd

#endif  // MATRIXD_CORE_MATRIX_GENERATOR_H_
