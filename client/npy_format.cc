// The .npy format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// A 6-byte magic "\x93NUMPY", a major and minor version byte, a little-endian header length
// (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), then a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline, then the raw array data.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/matrix_files.h"
#include "client/matrix_values.h"

namespace matrixd {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// A recursive-descent parser for the subset of Python literals numpy writes in a header: a dict
// of string keys to strings, True/False and tuples of non-negative integers.
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<NpyHeader> Parse() {
    NpyHeader header;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (!Consume(':')) return Error(absl::StrCat("expected ':' after key '", *key, "'"));
      SkipSpace();
      absl::Status status = ParseValue(*key, header);
      if (!status.ok()) return status;
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Error("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the dict");
    if (!header.descr) return absl::InvalidArgumentError("header has no 'descr'");
    if (!header.fortran_order) return absl::InvalidArgumentError("header has no 'fortran_order'");
    if (!header.shape) return absl::InvalidArgumentError("header has no 'shape'");
    return header;
  }

 private:
  absl::Status ParseValue(const std::string& key, NpyHeader& header) {
    if (key == "descr") {
      if (Peek() == '[') {
        return absl::InvalidArgumentError("unsupported dtype: structured arrays are not matrices");
      }
      absl::StatusOr<std::string> descr = ParseString();
      if (!descr.ok()) return descr.status();
      header.descr = *descr;
    } else if (key == "fortran_order") {
      if (ConsumeWord("True")) {
        header.fortran_order = true;
      } else if (ConsumeWord("False")) {
        header.fortran_order = false;
      } else {
        return Error("'fortran_order' is not True or False");
      }
    } else if (key == "shape") {
      absl::StatusOr<std::vector<int64_t>> shape = ParseTuple();
      if (!shape.ok()) return shape.status();
      header.shape = *shape;
    } else {
      return Error(absl::StrCat("unknown key '", key, "'"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  absl::StatusOr<std::vector<int64_t>> ParseTuple() {
    std::vector<int64_t> values;
    if (!Consume('(')) return Error("'shape' is not a tuple");
    while (true) {
      SkipSpace();
      if (Consume(')')) return values;
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("'shape' holds something other than a non-negative integer");
      }
      int64_t value = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        const int digit = text_[pos_++] - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          return Error("a 'shape' dimension overflows int64");
        }
        value = value * 10 + digit;
      }
      Consume('L');  // Python 2 wrote long integers with a suffix.
      values.push_back(value);
      SkipSpace();
      if (Consume(')')) return values;
      if (!Consume(',')) return Error("expected ',' or ')' in 'shape'");
    }
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed header at offset ", pos_, ": ", what));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

absl::StatusOr<v1::DType> DTypeFromDescr(absl::string_view descr) {
  if (descr.size() >= 2 && descr[0] == '>') {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", descr, "': big-endian data (use '<' byte order)"));
  }
  absl::string_view code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '=' || code[0] == '|')) code.remove_prefix(1);
  if (code == "f4") return v1::DTYPE_FLOAT32;
  if (code == "f8") return v1::DTYPE_FLOAT64;
  if (code == "c8") return v1::DTYPE_COMPLEX64;
  if (code == "c16") return v1::DTYPE_COMPLEX128;
  if (code == "i8") return v1::DTYPE_INT64;
  if (code == "u4") return v1::DTYPE_UINT32;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype '", descr, "', want one of <f4 <f8 <c8 <c16 <i8 <u4"));
}

absl::string_view DescrFor(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return "<f4";
    case v1::DTYPE_FLOAT64:
      return "<f8";
    case v1::DTYPE_COMPLEX64:
      return "<c8";
    case v1::DTYPE_COMPLEX128:
      return "<c16";
    case v1::DTYPE_INT64:
      return "<i8";
    case v1::DTYPE_UINT32:
      return "<u4";
    default:
      return "";
  }
}

uint32_t ReadLittleEndian(absl::string_view bytes, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

absl::StatusOr<v1::Matrix> ParseNpyBody(absl::string_view bytes) {
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError("bad magic: not a .npy file (want \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported .npy format version ", major, ".", minor));
  }
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t header_start = 8 + length_width;
  if (bytes.size() < header_start) {
    return absl::InvalidArgumentError("truncated: the file ends inside the header length");
  }
  const size_t header_length = ReadLittleEndian(bytes.substr(8), length_width);
  if (bytes.size() - header_start < header_length) {
    return absl::InvalidArgumentError(absl::StrCat("truncated: header of ", header_length,
                                                   " bytes, but only ", bytes.size() - header_start,
                                                   " follow"));
  }
  absl::StatusOr<NpyHeader> header =
      HeaderParser(bytes.substr(header_start, header_length)).Parse();
  if (!header.ok()) return header.status();
  absl::StatusOr<v1::DType> dtype = DTypeFromDescr(*header->descr);
  if (!dtype.ok()) return dtype.status();

  const std::vector<int64_t>& shape = *header->shape;
  int64_t rows = 0;
  int64_t cols = 0;
  if (shape.size() == 2) {
    rows = shape[0];
    cols = shape[1];
  } else if (shape.size() == 1) {
    rows = shape[0];
    cols = 1;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unsupported shape (",
                                                   absl::StrJoin(shape, ", "), "): want a 2-D",
                                                   " matrix (or a 1-D vector, read as a column)"));
  }
  const int64_t element = ElementSize(*dtype);
  if (rows > 0 && cols > std::numeric_limits<int64_t>::max() / element / rows) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", rows, " x ", cols, " is too large"));
  }
  const int64_t want = rows * cols * element;
  const absl::string_view data = bytes.substr(header_start + header_length);
  if (static_cast<int64_t>(data.size()) < want) {
    return absl::InvalidArgumentError(absl::StrCat("truncated data: ", data.size(), " bytes, want ",
                                                   rows, "*", cols, "*", element, " = ", want));
  }
  if (static_cast<int64_t>(data.size()) > want) {
    return absl::InvalidArgumentError(absl::StrCat(data.size() - want, " bytes after the ", want,
                                                   " bytes of a ", rows, " x ", cols, " ",
                                                   *header->descr, " array"));
  }

  v1::Matrix matrix;
  matrix.set_rows(rows);
  matrix.set_cols(cols);
  matrix.set_dtype(*dtype);
  if (!*header->fortran_order || rows <= 1 || cols <= 1) {
    // A vector's bytes are the same in either order.
    matrix.set_data(data.data(), data.size());
    return matrix;
  }
  // Fortran order stores column j as a contiguous run; gather it into row-major order.
  std::string row_major(data.size(), '\0');
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(&row_major[(i * cols + j) * element], &data[(j * rows + i) * element],
                  static_cast<size_t>(element));
    }
  }
  matrix.set_data(std::move(row_major));
  return matrix;
}

}  // namespace

absl::StatusOr<v1::Matrix> ParseNpy(absl::string_view bytes, absl::string_view name) {
  absl::StatusOr<v1::Matrix> matrix = ParseNpyBody(bytes);
  if (!matrix.ok()) {
    return absl::Status(matrix.status().code(),
                        absl::StrCat(name, ": ", matrix.status().message()));
  }
  return matrix;
}

absl::StatusOr<std::string> SerializeNpy(const v1::Matrix& matrix) {
  if (absl::Status status = CheckMatrixShape(matrix); !status.ok()) return status;
  std::string dict =
      absl::StrCat("{'descr': '", DescrFor(matrix.dtype()), "', 'fortran_order': False, 'shape': (",
                   matrix.rows(), ", ", matrix.cols(), "), }");
  // numpy pads so that the data starts on a 64-byte boundary, the header ending in '\n'.
  const size_t unpadded = kMagic.size() + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  if (dict.size() > std::numeric_limits<uint16_t>::max()) {
    return absl::InvalidArgumentError("npy header does not fit format 1.0");
  }
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  out.append(dict);
  out.append(matrix.data());
  return out;
}

}  // namespace matrixd
