#include "test_support.h"

#include <ATen/core/Tensor.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace mtc::bench::testing {
namespace {

class Fnv {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ = (hash_ ^ p[i]) * 0x100000001b3ULL;
    }
  }
  void text(const std::string& s) {
    number(static_cast<int64_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void number(int64_t v) { bytes(&v, sizeof v); }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

void hash_value(Fnv& fnv, const c10::IValue& value) {
  fnv.text(value.tagKind());
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    fnv.text(std::string(c10::toString(t.scalar_type())));
    for (int64_t s : t.sizes()) fnv.number(s);
    for (int64_t s : t.strides()) fnv.number(s);
    const at::Tensor dense = t.cpu().contiguous();
    fnv.bytes(dense.data_ptr(), static_cast<size_t>(dense.numel()) * dense.element_size());
  } else if (value.isTuple()) {
    for (const auto& item : value.toTupleRef().elements()) hash_value(fnv, item);
  } else if (value.isList()) {
    for (const auto& item : value.toListRef()) hash_value(fnv, item);
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) {
      hash_value(fnv, entry.key());
      hash_value(fnv, entry.value());
    }
  } else if (value.isString()) {
    fnv.text(value.toStringRef());
  } else if (value.isInt()) {
    fnv.number(value.toInt());
  } else if (value.isDouble()) {
    const double d = value.toDouble();
    fnv.bytes(&d, sizeof d);
  } else if (value.isBool()) {
    fnv.number(value.toBool() ? 1 : 0);
  }
}

}  // namespace

// POSIX, not std::filesystem operations: libtorch.so exports its own copies of those and some
// crash in a binary linking torch (see src/bench/files.h).
TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mtc-workload-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  ::nftw(
      path_.c_str(),
      [](const char* file, const struct stat*, int, struct FTW*) { return ::remove(file); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

void TempDir::make_directory(const std::string& name) const {
  ::mkdir((path_ / name).c_str(), 0755);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const auto file = path_ / name;
  std::ofstream(file, std::ios::binary) << text;
  return file.string();
}

Config config_from_text(const std::string& text, const std::vector<std::string>& sets) {
  return parse_config(text, (fixtures_dir() / "test.json").string(), sets);
}

uint64_t content_hash(const c10::IValue& value) {
  Fnv fnv;
  hash_value(fnv, value);
  return fnv.value();
}

void expect_config_error(const std::function<void()>& action, const std::string& json_path,
                         const std::string& message_part) {
  try {
    action();
    ADD_FAILURE() << "expected a ConfigError at " << json_path << " containing '" << message_part
                  << "'";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), json_path) << e.what();
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << message_part;
  }
}

}  // namespace mtc::bench::testing
