#include "gradlab/io/serialize.hpp"

namespace gradlab {

void save(const StateDict& dict, const std::filesystem::path& path) {
  io::save_safetensors(dict, path);
}

void save(const nn::Module& module, const std::filesystem::path& path) {
  io::save_safetensors(io::module_state_dict(module), path);
}

StateDict load(const std::filesystem::path& path) { return io::load_safetensors(path); }

nn::LoadResult load(nn::Module& module, const std::filesystem::path& path, bool strict) {
  return io::load_module_state_dict(module, io::load_safetensors(path), strict);
}

void save(const Tensor& tensor, const std::filesystem::path& path) {
  GRADLAB_CHECK(tensor.defined(), ValueError, "save", "the tensor is undefined", "a defined tensor", "undefined");
  StateDict d;
  d.insert("tensor", tensor);
  save(d, path);
}

void load(Tensor& tensor, const std::filesystem::path& path) {
  StateDict d = load(path);
  GRADLAB_CHECK(d.size() == 1 && d.contains("tensor"), IOError, "load",
                "the file does not hold one tensor", "a file written by save(tensor) (one key \"tensor\")",
                std::to_string(d.size()) + " keys in " + path.string(),
                "a state dict file loads with load(path) or load(module, path)");
  tensor = d.at("tensor");
}

void save(const TensorList& tensors, const std::filesystem::path& path) {
  StateDict d;
  for (size_t i = 0; i < tensors.size(); ++i) {
    GRADLAB_CHECK(tensors[i].defined(), ValueError, "save", "tensor " + std::to_string(i) + " of the list is undefined",
                  "defined tensors", "undefined");
    d.insert(std::to_string(i), tensors[i]);
  }
  save(d, path);
}

void load(TensorList& tensors, const std::filesystem::path& path) {
  StateDict d = load(path);
  TensorList r;
  for (size_t i = 0; i < d.size(); ++i) {
    GRADLAB_CHECK(d.contains(std::to_string(i)), IOError, "load", "the file does not hold a tensor list",
                  "keys \"0\" .. \"" + std::to_string(d.size() - 1) + "\" (written by save(tensor list))",
                  "no key \"" + std::to_string(i) + "\" in " + path.string());
    r.push_back(d.at(std::to_string(i)));
  }
  tensors = std::move(r);
}

}  // namespace gradlab
