// The Matrix Market exchange format (NIST, "The Matrix Market Exchange Formats: Initial
// Design", 1996): a "%%MatrixMarket matrix <format> <field> <symmetry>" banner, '%' comment
// lines, a size line, then one entry per line — 1-based "i j value" triples for coordinate
// format, column-major values for array format. Symmetric storage lists only the lower triangle.
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "client/client.h"
#include "client/matrix_files.h"

namespace matrixd {
namespace {

// A dense matrix larger than this is almost surely a large sparse file read by mistake.
constexpr int64_t kMaxDenseBytes = int64_t{1} << 31;

enum class Format { kCoordinate, kArray };
enum class Field { kReal, kInteger, kComplex, kPattern };
enum class Symmetry { kGeneral, kSymmetric, kSkewSymmetric, kHermitian };

struct Banner {
  Format format;
  Field field;
  Symmetry symmetry;
};

// Walks the text line by line, numbering lines from 1 and skipping blank and '%' lines.
class LineReader {
 public:
  explicit LineReader(absl::string_view text) : text_(text) {}

  // The next line with content, split on whitespace; false at the end of the text.
  bool Next(std::vector<absl::string_view>& tokens) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == absl::string_view::npos) end = text_.size();
      absl::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_number_;
      tokens = absl::StrSplit(line, absl::ByAnyChar(" \t\r\f\v"), absl::SkipEmpty());
      if (tokens.empty() || tokens[0].front() == '%') continue;
      return true;
    }
    return false;
  }

  // The first line, unsplit (the banner).
  absl::string_view FirstLine() {
    size_t end = text_.find('\n');
    if (end == absl::string_view::npos) end = text_.size();
    pos_ = end + 1;
    line_number_ = 1;
    return absl::StripTrailingAsciiWhitespace(text_.substr(0, end));
  }

  int line_number() const { return line_number_; }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int line_number_ = 0;
};

absl::StatusOr<Banner> ParseBanner(absl::string_view line) {
  std::vector<std::string> words = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty() || words[0] != "%%MatrixMarket") {
    return absl::InvalidArgumentError("bad banner: the first line must start with %%MatrixMarket");
  }
  if (words.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad banner '", line, "': want %%MatrixMarket matrix <format> <field> <symmetry>"));
  }
  for (std::string& word : words) absl::AsciiStrToLower(&word);
  if (words[1] != "matrix") {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported object '", words[1], "': only 'matrix'"));
  }
  Banner banner;
  if (words[2] == "coordinate") {
    banner.format = Format::kCoordinate;
  } else if (words[2] == "array") {
    banner.format = Format::kArray;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown format '", words[2], "': want coordinate or array"));
  }
  if (words[3] == "real" || words[3] == "double") {
    banner.field = Field::kReal;
  } else if (words[3] == "integer") {
    banner.field = Field::kInteger;
  } else if (words[3] == "complex") {
    banner.field = Field::kComplex;
  } else if (words[3] == "pattern") {
    banner.field = Field::kPattern;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown field '", words[3], "': want real, integer, complex or pattern"));
  }
  if (words[4] == "general") {
    banner.symmetry = Symmetry::kGeneral;
  } else if (words[4] == "symmetric") {
    banner.symmetry = Symmetry::kSymmetric;
  } else if (words[4] == "skew-symmetric") {
    banner.symmetry = Symmetry::kSkewSymmetric;
  } else if (words[4] == "hermitian") {
    banner.symmetry = Symmetry::kHermitian;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown symmetry '", words[4], "': want general, symmetric, skew-symmetric or hermitian"));
  }
  if (banner.field == Field::kPattern && banner.format == Format::kArray) {
    return absl::InvalidArgumentError("a pattern matrix must be in coordinate format");
  }
  if (banner.field == Field::kPattern && banner.symmetry == Symmetry::kSkewSymmetric) {
    return absl::InvalidArgumentError("a pattern matrix cannot be skew-symmetric");
  }
  if (banner.symmetry == Symmetry::kHermitian && banner.field != Field::kComplex) {
    return absl::InvalidArgumentError("a hermitian matrix must have the complex field");
  }
  return banner;
}

// Integer fields stay exact in int64; every other field is read as complex<double>.
template <typename T>
class DenseBuilder {
 public:
  DenseBuilder(int64_t rows, int64_t cols, Symmetry symmetry)
      : rows_(rows), cols_(cols), symmetry_(symmetry), values_(rows * cols) {}

  // Adds `value` at (i, j), 0-based, and its mirror image under the symmetry.
  absl::Status Add(int64_t i, int64_t j, T value) {
    if (symmetry_ != Symmetry::kGeneral) {
      if (i < j) {
        return absl::InvalidArgumentError(absl::StrCat(
            "entry (", i + 1, ", ", j + 1, ") lies above the diagonal of a matrix stored as ",
            "symmetric, skew-symmetric or hermitian (only the lower triangle may be listed)"));
      }
      if (i == j && symmetry_ == Symmetry::kSkewSymmetric && value != T{}) {
        return absl::InvalidArgumentError(absl::StrCat("diagonal entry (", i + 1, ", ", j + 1,
                                                       ") of a skew-symmetric matrix is not zero"));
      }
      if constexpr (!std::is_same_v<T, int64_t>) {
        if (i == j && symmetry_ == Symmetry::kHermitian && value.imag() != 0) {
          return absl::InvalidArgumentError(absl::StrCat("diagonal entry (", i + 1, ", ", j + 1,
                                                         ") of a hermitian matrix is not real"));
        }
      }
    }
    if (absl::Status status = Accumulate(i, j, value); !status.ok()) return status;
    if (i == j || symmetry_ == Symmetry::kGeneral) return absl::OkStatus();
    if (symmetry_ == Symmetry::kSymmetric) return Accumulate(j, i, value);
    if (symmetry_ == Symmetry::kSkewSymmetric) {
      if constexpr (std::is_same_v<T, int64_t>) {
        if (value == std::numeric_limits<int64_t>::min()) {
          return absl::InvalidArgumentError("skew-symmetric mirror of -2^63 overflows int64");
        }
      }
      return Accumulate(j, i, -value);
    }
    if constexpr (!std::is_same_v<T, int64_t>) return Accumulate(j, i, std::conj(value));
    return absl::OkStatus();
  }

  v1::Matrix Build() const {
    if constexpr (std::is_same_v<T, int64_t>) {
      return MakeMatrix<int64_t>(rows_, cols_, values_);
    } else if (field_is_complex_) {
      return MakeMatrix<std::complex<double>>(rows_, cols_, values_);
    } else {
      std::vector<double> real(values_.size());
      for (size_t k = 0; k < values_.size(); ++k) real[k] = values_[k].real();
      return MakeMatrix<double>(rows_, cols_, real);
    }
  }

  void set_field_is_complex(bool complex) { field_is_complex_ = complex; }

 private:
  absl::Status Accumulate(int64_t i, int64_t j, T value) {
    T& slot = values_[i * cols_ + j];
    if constexpr (std::is_same_v<T, int64_t>) {
      if (__builtin_add_overflow(slot, value, &slot)) {
        return absl::InvalidArgumentError(absl::StrCat("summing duplicate entries at (", i + 1,
                                                       ", ", j + 1, ") overflows int64"));
      }
    } else {
      slot += value;
    }
    return absl::OkStatus();
  }

  int64_t rows_;
  int64_t cols_;
  Symmetry symmetry_;
  bool field_is_complex_ = false;
  std::vector<T> values_;
};

absl::StatusOr<int64_t> ParseCount(absl::string_view token, absl::string_view what) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(token, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", token, "' is not a non-negative integer"));
  }
  return value;
}

// Parses the value tokens of one entry.
template <typename T>
absl::StatusOr<T> ParseValue(const std::vector<absl::string_view>& tokens, size_t first,
                             Field field) {
  if constexpr (std::is_same_v<T, int64_t>) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(tokens[first], &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", tokens[first], "' is not an int64 integer"));
    }
    return value;
  } else {
    if (field == Field::kPattern) return T(1.0, 0.0);
    double re = 0;
    double im = 0;
    if (!absl::SimpleAtod(tokens[first], &re)) {
      return absl::InvalidArgumentError(absl::StrCat("'", tokens[first], "' is not a number"));
    }
    if (field == Field::kComplex && !absl::SimpleAtod(tokens[first + 1], &im)) {
      return absl::InvalidArgumentError(absl::StrCat("'", tokens[first + 1], "' is not a number"));
    }
    return T(re, im);
  }
}

size_t ValueTokens(Field field) {
  switch (field) {
    case Field::kPattern:
      return 0;
    case Field::kComplex:
      return 2;
    default:
      return 1;
  }
}

template <typename T>
absl::StatusOr<v1::Matrix> ReadEntries(LineReader& reader, const Banner& banner, int64_t rows,
                                       int64_t cols, int64_t declared_entries) {
  DenseBuilder<T> builder(rows, cols, banner.symmetry);
  builder.set_field_is_complex(banner.field == Field::kComplex);
  const bool coordinate = banner.format == Format::kCoordinate;
  const size_t want_tokens = (coordinate ? 2 : 0) + ValueTokens(banner.field);
  auto at_line = [&](const absl::Status& status) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", reader.line_number(), ": ", status.message()));
  };

  // Array format walks the stored triangle column by column.
  int64_t array_i = 0;
  int64_t array_j = 0;
  const int64_t first_row_offset = banner.symmetry == Symmetry::kGeneral         ? -1
                                   : banner.symmetry == Symmetry::kSkewSymmetric ? 1
                                                                                 : 0;
  auto array_column_start = [&](int64_t j) {
    return first_row_offset < 0 ? 0 : j + first_row_offset;
  };
  array_i = array_column_start(0);
  while (array_j < cols && array_i >= rows) array_i = array_column_start(++array_j);

  std::vector<absl::string_view> tokens;
  int64_t entries = 0;
  while (reader.Next(tokens)) {
    if (entries == declared_entries) {
      return at_line(absl::InvalidArgumentError(
          absl::StrCat("more entries than the ", declared_entries, " the size line declares")));
    }
    if (tokens.size() != want_tokens) {
      return at_line(absl::InvalidArgumentError(
          absl::StrCat("malformed entry: ", tokens.size(), " fields, want ", want_tokens)));
    }
    int64_t i = array_i;
    int64_t j = array_j;
    if (coordinate) {
      if (!absl::SimpleAtoi(tokens[0], &i) || !absl::SimpleAtoi(tokens[1], &j)) {
        return at_line(absl::InvalidArgumentError(absl::StrCat(
            "malformed entry: indices '", tokens[0], " ", tokens[1], "' are not integers")));
      }
      if (i < 1 || i > rows || j < 1 || j > cols) {
        return at_line(absl::InvalidArgumentError(absl::StrCat(
            "index (", i, ", ", j, ") out of range for a ", rows, " x ", cols, " matrix")));
      }
      --i;
      --j;
    }
    absl::StatusOr<T> value = ParseValue<T>(tokens, coordinate ? 2 : 0, banner.field);
    if (!value.ok()) return at_line(value.status());
    if (absl::Status status = builder.Add(i, j, *value); !status.ok()) return at_line(status);
    ++entries;
    if (!coordinate) {
      ++array_i;
      while (array_j < cols && array_i >= rows) array_i = array_column_start(++array_j);
    }
  }
  if (entries < declared_entries) {
    return absl::InvalidArgumentError(
        absl::StrCat("truncated: ", declared_entries, " entries expected, ", entries, " found"));
  }
  return builder.Build();
}

absl::StatusOr<v1::Matrix> ParseMatrixMarketBody(absl::string_view text) {
  LineReader reader(text);
  absl::StatusOr<Banner> banner = ParseBanner(reader.FirstLine());
  if (!banner.ok())
    return absl::InvalidArgumentError(absl::StrCat("line 1: ", banner.status().message()));

  std::vector<absl::string_view> tokens;
  if (!reader.Next(tokens)) return absl::InvalidArgumentError("truncated: no size line");
  const bool coordinate = banner->format == Format::kCoordinate;
  const size_t want = coordinate ? 3 : 2;
  auto at_line = [&](absl::string_view message) {
    return absl::InvalidArgumentError(absl::StrCat("line ", reader.line_number(), ": ", message));
  };
  if (tokens.size() != want) {
    return at_line(absl::StrCat("bad size line: ", tokens.size(), " fields, want ", want,
                                coordinate ? " (rows cols entries)" : " (rows cols)"));
  }
  absl::StatusOr<int64_t> rows = ParseCount(tokens[0], "row count");
  absl::StatusOr<int64_t> cols = ParseCount(tokens[1], "column count");
  for (const auto* count : {&rows, &cols}) {
    if (!count->ok()) return at_line(absl::StrCat("bad size line: ", count->status().message()));
  }
  if (banner->symmetry != Symmetry::kGeneral && *rows != *cols) {
    return at_line(absl::StrCat("a ", *rows, " x ", *cols,
                                " matrix cannot be symmetric, skew-symmetric or hermitian"));
  }
  const int64_t element = banner->field == Field::kInteger   ? 8
                          : banner->field == Field::kComplex ? 16
                                                             : 8;
  if (*rows > 0 && *cols > kMaxDenseBytes / element / *rows) {
    return at_line(absl::StrCat("a dense ", *rows, " x ", *cols, " matrix exceeds ", kMaxDenseBytes,
                                " bytes"));
  }
  int64_t entries = 0;
  if (coordinate) {
    absl::StatusOr<int64_t> declared = ParseCount(tokens[2], "entry count");
    if (!declared.ok())
      return at_line(absl::StrCat("bad size line: ", declared.status().message()));
    entries = *declared;
  } else {
    const int64_t n = *rows;
    switch (banner->symmetry) {
      case Symmetry::kGeneral:
        entries = *rows * *cols;
        break;
      case Symmetry::kSkewSymmetric:
        entries = n * (n - 1) / 2;
        break;
      default:
        entries = n * (n + 1) / 2;
    }
  }
  if (banner->field == Field::kInteger) {
    return ReadEntries<int64_t>(reader, *banner, *rows, *cols, entries);
  }
  return ReadEntries<std::complex<double>>(reader, *banner, *rows, *cols, entries);
}

}  // namespace

absl::StatusOr<v1::Matrix> ParseMatrixMarket(absl::string_view text, absl::string_view name) {
  absl::StatusOr<v1::Matrix> matrix = ParseMatrixMarketBody(text);
  if (!matrix.ok()) {
    return absl::Status(matrix.status().code(),
                        absl::StrCat(name, ": ", matrix.status().message()));
  }
  return matrix;
}

}  // namespace matrixd
