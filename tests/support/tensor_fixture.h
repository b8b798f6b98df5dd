#pragma once
// Fixtures written by `torch.save` of a flat dict of tensors (the tests/fixtures/make-*.py
// scripts), read by name. Header-only: the plugins' own tests use it too.
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::test {

inline std::map<std::string, torch::Tensor> read_tensor_dict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the fixture " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : torch::pickle_load(bytes).toGenericDict()) out[item.key().toStringRef()] = item.value().toTensor();
  return out;
}

}  // namespace yoloflow::test
