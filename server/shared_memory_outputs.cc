#include "server/shared_memory_outputs.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <span>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {
namespace {

// The response's fields of type Matrix, by name.
std::vector<std::string> MatrixFields(const google::protobuf::Descriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type.field(i);
    if (!field->is_repeated() && field->message_type() == v1::Matrix::descriptor()) {
      names.push_back(std::string(field->name()));
    }
  }
  return names;
}

std::string Shape(int64_t rows, int64_t cols, DType dtype) {
  return absl::StrCat(rows, "x", cols, " ", DTypeName(dtype));
}

// The response's repeated int64 fields (index results such as pivots), by name.
std::vector<std::string> IndexFields(const google::protobuf::Descriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type.field(i);
    if (field->is_repeated() &&
        field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64) {
      names.push_back(std::string(field->name()));
    }
  }
  return names;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

absl::StatusOr<SharedMemoryOutputs> SharedMemoryOutputs::Resolve(
    const v1::ResultOptions& options, const google::protobuf::Descriptor& response_type,
    SharedMemoryRegistry* registry, const std::string& owner) {
  SharedMemoryOutputs outputs;
  if (options.shared_memory_outputs().empty()) return outputs;
  if (registry == nullptr) {
    return absl::FailedPreconditionError(
        "result_options.shared_memory_outputs: this server takes no shared-memory matrices");
  }
  if (options.keep_result()) {
    return absl::InvalidArgumentError(
        "result_options: shared_memory_outputs and keep_result are exclusive; a result goes to "
        "one place");
  }
  const std::vector<std::string> fields = MatrixFields(response_type);
  const std::vector<std::string> index_fields = IndexFields(response_type);
  // In name order, so that errors and writes do not depend on the map's order.
  const std::map<std::string, v1::SharedMemoryRef> targets(options.shared_memory_outputs().begin(),
                                                           options.shared_memory_outputs().end());
  for (const auto& [name, proto] : targets) {
    const std::string where = absl::StrCat("result_options.shared_memory_outputs[\"", name, "\"]");
    const bool indices = Contains(index_fields, name);
    if (!indices && !Contains(fields, name)) {
      std::vector<std::string> all = fields;
      all.insert(all.end(), index_fields.begin(), index_fields.end());
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", response_type.name(), " has no result matrix \"", name, "\"",
                       all.empty() ? "" : "; it has ", absl::StrJoin(all, ", ")));
    }
    absl::StatusOr<SharedMemoryReference> reference = FromProto(proto, where);
    if (!reference.ok()) return reference.status();
    absl::StatusOr<SharedMemoryMatrix> matrix = registry->Resolve(*reference, where, owner);
    if (!matrix.ok()) return matrix.status();
    if (indices && matrix->view.dtype != DType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", name,
                                                     " is a list of int64 indices; the target is ",
                                                     DTypeName(matrix->view.dtype)));
    }
    outputs.targets_.push_back({.field = name, .matrix = *std::move(matrix), .indices = indices});
  }
  return outputs;
}

void SharedMemoryOutputs::OfferTo(ResultDestinations& destinations) const {
  for (const Target& target : targets_) {
    // Host memory only: a CUDA region's target is lent as a device output (LendDeviceTarget).
    if (target.matrix.device != nullptr || target.matrix.writable == nullptr) continue;
    destinations.Add(target.field, {target.matrix.writable, target.matrix.view.byte_size()});
  }
}

ResidentMatrix* SharedMemoryOutputs::LendDeviceTarget(const std::string& field) const {
  for (const Target& target : targets_) {
    if (target.field == field && target.matrix.device != nullptr) {
      target.lent = true;
      return target.matrix.device.get();
    }
  }
  return nullptr;
}

absl::StatusOr<bool> SharedMemoryOutputs::WriteIndices(const std::string& field,
                                                       std::span<const int64_t> values,
                                                       bool in_place) const {
  for (const Target& target : targets_) {
    if (!target.indices || target.field != field) continue;
    if (in_place) {
      target.written = true;
      return true;
    }
    const MatrixView& to = target.matrix.view;
    if (static_cast<uint64_t>(to.size()) != values.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("result_options.shared_memory_outputs[\"", field, "\"] holds ", to.size(),
                       " int64 values (", Shape(to.rows, to.cols, to.dtype), "); the result has ",
                       values.size()));
    }
    const std::span<const std::byte> bytes = std::as_bytes(values);
    if (target.matrix.device != nullptr) {
      if (absl::Status written = target.matrix.device->Write(0, bytes); !written.ok()) {
        return written;
      }
    } else {
      std::memcpy(target.matrix.writable, bytes.data(), bytes.size());
    }
    target.written = true;
    return true;
  }
  return false;
}

absl::Status SharedMemoryOutputs::Write(google::protobuf::Message& response) const {
  const google::protobuf::Reflection& reflection = *response.GetReflection();
  for (const Target& target : targets_) {
    if (target.indices) {
      if (!target.written) {
        return absl::InvalidArgumentError(absl::StrCat("result_options.shared_memory_outputs[\"",
                                                       target.field, "\"]: this call produced no ",
                                                       target.field));
      }
      continue;
    }
    const google::protobuf::FieldDescriptor* field =
        response.GetDescriptor()->FindFieldByName(target.field);
    const MatrixView& to = target.matrix.view;
    if (!reflection.HasField(response, field)) {
      return absl::InvalidArgumentError(absl::StrCat("result_options.shared_memory_outputs[\"",
                                                     target.field, "\"]: this call produced no ",
                                                     target.field));
    }
    const auto& result = static_cast<const v1::Matrix&>(reflection.GetMessage(response, field));
    if (target.lent && IsAbsent(result)) {  // the operation wrote it in place
      reflection.ClearField(&response, field);
      continue;
    }
    absl::StatusOr<DType> dtype = FromProto(result.dtype(), target.field);
    if (!dtype.ok()) return dtype.status();
    // Written in place by the operation: the shape came back without the bytes.
    const bool in_place = result.data().empty() && to.byte_size() > 0;
    if (result.rows() != to.rows || result.cols() != to.cols || *dtype != to.dtype ||
        (!in_place && result.data().size() != to.byte_size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("result_options.shared_memory_outputs[\"", target.field, "\"] is ",
                       Shape(to.rows, to.cols, to.dtype), "; the result is ",
                       Shape(result.rows(), result.cols(), *dtype)));
    }
    if (in_place) {
      // Written by the operation into the host target it was offered (OfferTo).
    } else if (target.matrix.device != nullptr) {
      if (absl::Status written = target.matrix.device->Write(
              0,
              std::span<const std::byte>(reinterpret_cast<const std::byte*>(result.data().data()),
                                         result.data().size()));
          !written.ok()) {
        return written;
      }
    } else {
      std::memcpy(target.matrix.writable, result.data().data(), result.data().size());
    }
    reflection.ClearField(&response, field);
  }
  return absl::OkStatus();
}

}  // namespace matrixd::server
