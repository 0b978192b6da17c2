// The one translation unit that includes torch's serialization headers (they are heavy and
// outside the ATen/c10 subset the rest of the project uses).
#include "workload/saved_batch.h"

#include <fmt/format.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "errors.h"
#include "workload/detail/files.h"

namespace mtc::bench {
namespace {

// c10::Error messages carry a C++ backtrace; the first line is the reason.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

c10::IValue load_saved_batch(const std::string& path) {
  detail::readable_file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  // torch.save writes a zip archive (local file header "PK\x03\x04") since torch 1.6; before, a
  // bare pickle stream (protocol 2: 0x80 0x02), which libtorch cannot read.
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x80 && data[1] == 0x02) {
    throw ConfigError(
        path, "",
        "legacy (non-zip) torch.save format is not supported; re-save it with "
        "torch.save(obj, path) from torch >= 1.6 without _use_new_zipfile_serialization=False");
  }
  if (data.size() < 4 || data[0] != 'P' || data[1] != 'K' || data[2] != 3 || data[3] != 4) {
    throw ConfigError(path, "", "not a torch.save file: it is not a zip archive");
  }
  try {
    return torch::jit::pickle_load(data);
  } catch (const c10::Error& e) {
    throw ConfigError(path, "",
                      "not a readable torch.save file: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw ConfigError(path, "", "not a readable torch.save file: " + first_line(e.what()));
  }
}

}  // namespace mtc::bench
