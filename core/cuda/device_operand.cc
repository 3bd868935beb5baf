#include "core/cuda/device_operand.h"

#include <utility>

#include "core/status_macros.h"

namespace matrixd::cuda {

bool InPlaceOnDevice(const MatrixView& view, const DeviceContext& context) {
  return view.on_device() && context.OnThisDevice(view.data);
}

absl::StatusOr<DeviceOperand> OnDevice(const MatrixView& view, DeviceContext& context) {
  DeviceOperand operand;
  if (InPlaceOnDevice(view, context)) {
    operand.data = view.data;
    return operand;
  }
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer copy, context.Allocate(view.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(view.data, copy, view.byte_size()));
  operand.copy = std::move(copy);
  operand.data = operand.copy.data();
  return operand;
}

}  // namespace matrixd::cuda
