// File I/O and dispatch by extension; the formats live in npy_format.cc and
// matrix_market_format.cc.
#include "client/matrix_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace matrixd {
namespace {

absl::Status IoError(int error_number, absl::string_view what, const std::string& path) {
  return absl::Status(
      absl::ErrnoToStatusCode(error_number),
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(error_number)));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(errno, "open", path);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return IoError(errno, "read", path);
  return std::move(contents).str();
}

}  // namespace

absl::StatusOr<v1::Matrix> ReadNpyFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseNpy(*bytes, path);
}

absl::StatusOr<v1::Matrix> ReadMatrixMarketFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ParseMatrixMarket(*text, path);
}

absl::Status WriteNpyFile(const v1::Matrix& matrix, const std::string& path) {
  absl::StatusOr<std::string> bytes = SerializeNpy(matrix);
  if (!bytes.ok()) return bytes.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(errno, "create", path);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return IoError(errno, "write", path);
  return absl::OkStatus();
}

absl::StatusOr<v1::Matrix> ReadMatrixFile(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".npy")) return ReadNpyFile(path);
  if (absl::EndsWith(lower, ".mtx")) return ReadMatrixMarketFile(path);
  return absl::InvalidArgumentError(
      absl::StrCat("'", path, "': unknown file type, want a .npy or .mtx file"));
}

}  // namespace matrixd
