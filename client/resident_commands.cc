#include "client/resident_commands.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/handle_prefix.h"
#include "client/matrix_files.h"
#include "client/matrix_values.h"
#include "client/progress_bar.h"
#include "client/result_format.h"

namespace matrixd {
namespace {

std::string Rate(uint64_t bytes, absl::Duration elapsed) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  if (seconds <= 0) return "";
  return absl::StrFormat(", %.3f GB/s", static_cast<double>(bytes) / seconds / 1e9);
}

}  // namespace

absl::StatusOr<v1::ResidentMatrix> ResolveHandle(Client& client, absl::string_view prefix) {
  absl::StatusOr<v1::ListMatricesResponse> listed = client.ListMatrices();
  if (!listed.ok()) return listed.status();
  return ResolveHandlePrefix(prefix, *listed);
}

absl::Status RunUpload(Client& client, const v1::Matrix& matrix, UploadOptions options,
                       const TransferDisplay& display, std::ostream& out, std::ostream& log) {
  ProgressBar bar(*display.out, "upload", matrix.data().size(), display.terminal);
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
  const absl::Time start = absl::Now();
  absl::StatusOr<RemoteMatrix> uploaded = client.Upload(matrix, options);
  const absl::Duration elapsed = absl::Now() - start;
  bar.Done();
  if (!uploaded.ok()) return uploaded.status();
  const v1::ResidentMatrix info = uploaded->info();
  uploaded->Detach();  // it stays on the server after matrixctl exits
  out << info.handle() << "\n" << std::flush;
  log << "uploaded " << FormatResidentShape(info) << " to " << info.device() << " in "
      << FormatSeconds(absl::ToDoubleSeconds(elapsed)) << Rate(info.bytes(), elapsed) << "\n";
  return absl::OkStatus();
}

absl::Status RunDownload(Client& client, absl::string_view handle, const std::string& path,
                         const TransferDisplay& display, std::ostream& out) {
  absl::StatusOr<v1::ResidentMatrix> resolved = ResolveHandle(client, handle);
  if (!resolved.ok()) return resolved.status();
  ProgressBar bar(*display.out, "download", resolved->bytes(), display.terminal);
  DownloadOptions options;
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::Matrix> matrix = client.Download(resolved->handle(), options);
  const absl::Duration elapsed = absl::Now() - start;
  bar.Done();
  if (!matrix.ok()) return matrix.status();
  if (absl::Status written = WriteNpyFile(*matrix, path); !written.ok()) return written;
  out << "downloaded " << resolved->handle() << " (" << FormatResidentShape(*resolved) << ") in "
      << FormatSeconds(absl::ToDoubleSeconds(elapsed)) << Rate(resolved->bytes(), elapsed) << " to "
      << path << "\n";
  return absl::OkStatus();
}

absl::Status RunList(Client& client, std::ostream& out) {
  absl::StatusOr<v1::ListMatricesResponse> listed = client.ListMatrices();
  if (!listed.ok()) return listed.status();
  for (const v1::ResidentMatrix& m : listed->matrices()) {
    out << m.handle() << "  " << FormatResidentShape(m) << "  " << m.device()
        << absl::StrFormat("  age %.1f s, idle %.1f s", m.age_seconds(), m.idle_seconds())
        << (m.spilled() ? "  spilled" : "")
        << (m.missing_bytes() > 0 ? absl::StrCat("  missing ", FormatBytes(m.missing_bytes())) : "")
        << (m.label().empty() ? "" : absl::StrCat("  ", m.label())) << "\n";
  }
  out << listed->matrices_size() << " resident matrices, " << FormatBytes(listed->resident_bytes())
      << " of " << FormatBytes(listed->limit_bytes()) << "\n";
  return absl::OkStatus();
}

absl::Status RunRelease(Client& client, const std::vector<std::string>& handles,
                        std::ostream& out) {
  for (const std::string& handle : handles) {
    absl::StatusOr<v1::ResidentMatrix> resolved = ResolveHandle(client, handle);
    if (!resolved.ok()) return resolved.status();
    absl::StatusOr<uint64_t> freed = client.Release(resolved->handle());
    if (!freed.ok()) return freed.status();
    out << "released " << resolved->handle() << " (" << FormatBytes(*freed) << ")\n";
  }
  return absl::OkStatus();
}

}  // namespace matrixd
