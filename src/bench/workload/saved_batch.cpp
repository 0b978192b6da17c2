// The one translation unit that includes torch's serialization headers (they are heavy and
// outside the ATen/c10 subset the rest of the project uses).
#include "workload/saved_batch.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "errors.h"
#include "files.h"

namespace mtc::bench {
namespace {

// c10::Error messages carry a C++ backtrace; the first line is the reason.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The file's bytes for libtorch's zip reader, never read past their end. (torch::jit::pickle_load
// reads through VectorReader, which copies whatever range the archive's directory names: a
// damaged archive pointing past the end read wild memory and crashed. A short read here makes
// the zip reader reject the archive instead.)
class BoundedReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BoundedReader(std::vector<char> data) : data_(std::move(data)) {}
  size_t size() const override { return data_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= data_.size()) return 0;
    const size_t count = std::min<uint64_t>(n, data_.size() - pos);
    std::memcpy(buf, data_.data() + pos, count);
    return count;
  }

 private:
  std::vector<char> data_;
};

// What torch::jit::pickle_load does, through BoundedReader.
c10::IValue unpickle_archive(std::vector<char> data) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedReader>(std::move(data)));
  return torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                           /*type_resolver=*/std::nullopt,
                                           /*obj_loader=*/std::nullopt, /*device=*/std::nullopt,
                                           reader);
}

}  // namespace

c10::IValue load_saved_batch(const std::string& path) {
  readable_file_size(path);
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
    return unpickle_archive(std::move(data));
  } catch (const c10::Error& e) {
    throw ConfigError(path, "",
                      "not a readable torch.save file: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw ConfigError(path, "", "not a readable torch.save file: " + first_line(e.what()));
  }
}

}  // namespace mtc::bench
