#include "training/model/fetched_weights.h"

#include "runtime/fetch/named_assets.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

void check_released_weights(const std::string& path) {
  // TorchFile checks the archive (every record's CRC-32) and reads the pickle without running
  // it; the checkpoint reader then needs every tensor of a YOLO11 model.
  TorchFile file = TorchFile::open(path);
  if (!is_ultralytics_checkpoint(file.root())) {
    throw InvalidInput("weights file '" + path + "' is not an Ultralytics checkpoint");
  }
  read_ultralytics_checkpoint(file);
}

std::string locate_weights_file(const std::string& value) { return locate_weights(value, check_released_weights); }

}  // namespace yoloflow::core
