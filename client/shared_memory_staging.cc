#include "client/shared_memory_staging.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/result_format.h"

namespace matrixd {
namespace {

using google::protobuf::FieldDescriptor;

// An inline operand field (set) and its reference twin.
struct OperandField {
  const FieldDescriptor* inline_field;
  const FieldDescriptor* ref_field;
};

std::vector<OperandField> InlineOperands(const google::protobuf::Message& request) {
  const google::protobuf::Descriptor& type = *request.GetDescriptor();
  const google::protobuf::Reflection& reflection = *request.GetReflection();
  std::vector<OperandField> operands;
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor* field = type.field(i);
    if (field->is_repeated() || field->message_type() != v1::Matrix::descriptor() ||
        !reflection.HasField(request, field)) {
      continue;
    }
    const FieldDescriptor* ref = type.FindFieldByName(absl::StrCat(field->name(), "_ref"));
    if (ref != nullptr && ref->message_type() == v1::MatrixRef::descriptor()) {
      operands.push_back({field, ref});
    }
  }
  return operands;
}

}  // namespace

absl::StatusOr<SharedMemoryRegion> StageInSharedMemory(Client& client,
                                                       google::protobuf::Message& request,
                                                       const std::vector<ResultShape>& results,
                                                       const std::string& name, std::ostream& log) {
  const google::protobuf::Reflection& reflection = *request.GetReflection();
  const std::vector<OperandField> operands = InlineOperands(request);
  const FieldDescriptor* options_field = request.GetDescriptor()->FindFieldByName("result_options");
  if (!results.empty() && options_field == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(request.GetDescriptor()->name(), " has no result_options"));
  }
  uint64_t bytes = 0;
  for (const OperandField& operand : operands) {
    const auto& matrix =
        static_cast<const v1::Matrix&>(reflection.GetMessage(request, operand.inline_field));
    bytes += SharedMemoryRegion::AllocationSize(matrix.rows(), matrix.cols(), matrix.dtype());
  }
  uint64_t result_bytes = 0;
  for (const ResultShape& result : results) {
    result_bytes += SharedMemoryRegion::AllocationSize(result.rows, result.cols, result.dtype);
  }
  absl::StatusOr<SharedMemoryRegion> region =
      SharedMemoryRegion::Create(&client, name, std::max<uint64_t>(bytes + result_bytes, 1));
  if (!region.ok()) return region.status();

  std::string copied;
  for (const OperandField& operand : operands) {
    auto* matrix =
        static_cast<v1::Matrix*>(reflection.MutableMessage(&request, operand.inline_field));
    absl::StatusOr<SharedMatrixView> view = region->Put(*matrix);
    if (!view.ok()) return view.status();
    absl::StrAppend(&copied, copied.empty() ? "" : ", ", operand.inline_field->name(), " (",
                    FormatShape(*matrix), ")");
    // Setting the oneof's other member clears the inline matrix.
    *static_cast<v1::MatrixRef*>(reflection.MutableMessage(&request, operand.ref_field)) =
        view->ref();
  }
  if (!results.empty()) {
    auto* options =
        static_cast<v1::ResultOptions*>(reflection.MutableMessage(&request, options_field));
    for (const ResultShape& result : results) {
      absl::StatusOr<SharedMatrixView> view =
          region->Allocate(result.rows, result.cols, result.dtype);
      if (!view.ok()) return view.status();
      WriteResultInto(*options, result.field, *view);
    }
  }
  log << "shared memory: " << (copied.empty() ? "no inline input" : "copied " + copied) << " ("
      << FormatBytes(bytes) << ") into /dev/shm" << region->key() << ", registered as "
      << region->name()
      << (results.empty() ? "" : absl::StrCat("; ", results.size(), " result(s) come back there"))
      << "\n";
  return region;
}

std::optional<v1::Matrix> OperandMatrix(const v1::Matrix* matrix, const v1::MatrixRef& ref,
                                        const SharedMemoryRegion* region) {
  if (matrix != nullptr) return *matrix;
  if (region == nullptr || !ref.has_shared_memory()) return std::nullopt;
  const v1::SharedMemoryRef& shm = ref.shared_memory();
  if (shm.region() != region->name()) return std::nullopt;
  absl::StatusOr<SharedMatrixView> view =
      region->View(shm.offset(), shm.rows(), shm.cols(), shm.dtype());
  if (!view.ok()) return std::nullopt;
  return view->ToMatrix();
}

}  // namespace matrixd
