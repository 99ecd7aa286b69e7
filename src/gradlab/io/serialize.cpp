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

}  // namespace gradlab
