// Host memory a caller wants result matrices written into, by result name ("lu", "solution",
// ...): typically a range of a client's shared-memory region that the server has page-locked.
// An operation that honours an entry makes that result a Matrix borrowing the range
// (Matrix::borrowed()) and computes or downloads it there, skipping a result buffer and a copy;
// one that does not returns its own Matrix and the caller copies it. An entry is used only for a
// result of exactly its byte size.
#ifndef MATRIXD_CORE_RESULT_DESTINATIONS_H_
#define MATRIXD_CORE_RESULT_DESTINATIONS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/matrix.h"

namespace matrixd {

class ResultDestinations {
 public:
  // REQUIRES: `bytes` stays valid and unused by anything else until the operation has returned,
  // and is aligned for the result's dtype.
  void Add(std::string name, std::span<std::byte> bytes);
  bool empty() const { return entries_.empty(); }

  // A zeroed rows x cols matrix for result `name`: borrowing its destination when one of exactly
  // that size was given, else a new one.
  Matrix Make(std::string_view name, int64_t rows, int64_t cols, DType dtype) const;
  // As Make, but nothing is cleared (neither a borrowed destination nor a new matrix,
  // Matrix::ForOverwrite): for results written in full.
  Matrix MakeForOverwrite(std::string_view name, int64_t rows, int64_t cols, DType dtype) const;
  // As Make, holding a copy of `source`'s bytes (for operations that work in place).
  Matrix CopyOf(std::string_view name, const MatrixView& source) const;
  // The destination of index result `name` (e.g. a batch's "permutation") when one of exactly
  // `count` int64 entries was given, else an empty span. Whoever takes it writes every entry and
  // says so in its result (e.g. FactorizeResult::permutation_in_destination).
  std::span<int64_t> Indices(std::string_view name, size_t count) const;

 private:
  struct Entry {
    std::string name;
    std::span<std::byte> bytes;
  };
  std::byte* Find(std::string_view name, size_t byte_size) const;

  std::vector<Entry> entries_;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_RESULT_DESTINATIONS_H_
