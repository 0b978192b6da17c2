#include "workload/npy.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <fmt/format.h>

#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "errors.h"
#include "files.h"
#include "shown.h"

namespace mtc::bench {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader maps little-endian files directly into tensors");

constexpr std::align_val_t kBufferAlignment{64};
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct ElementType {
  const char* code;  // descr without its byte-order mark
  c10::ScalarType type;
  size_t size;
};
constexpr std::array<ElementType, 11> kTypes{{
    {"b1", c10::ScalarType::Bool, 1},
    {"u1", c10::ScalarType::Byte, 1},
    {"i1", c10::ScalarType::Char, 1},
    {"i2", c10::ScalarType::Short, 2},
    {"i4", c10::ScalarType::Int, 4},
    {"i8", c10::ScalarType::Long, 8},
    {"f2", c10::ScalarType::Half, 2},
    {"f4", c10::ScalarType::Float, 4},
    {"f8", c10::ScalarType::Double, 8},
    {"c8", c10::ScalarType::ComplexFloat, 8},
    {"c16", c10::ScalarType::ComplexDouble, 16},
}};
constexpr const char* kSupported = "|b1, |u1, |i1, <i2, <i4, <i8, <f2, <f4, <f8, <c8, <c16";

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2,
// 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  Header parse() {
    Header header;
    bool has_descr = false;
    bool has_order = false;
    bool has_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        if (peek('[')) fail("structured dtypes (a list 'descr') are not supported");
        header.descr = string();
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = tuple();
        has_shape = true;
      } else {
        fail(fmt::format("unexpected header key '{}'", shown(key)));
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!has_descr || !has_order || !has_shape)
      fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw ConfigError(path_, "", "bad .npy header: " + message);
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}' at offset {}", c, pos_));
    ++pos_;
  }
  std::string string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail(fmt::format("expected a string at offset {}", pos_));
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(pos_, std::strlen(word)) == word) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    fail(fmt::format("expected True or False at offset {}", pos_));
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    while (!peek(')')) {
      int64_t value = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, text_[pos_] - '0', &value)) {
          fail("a dimension does not fit in 64 bits");
        }
        ++pos_;
        ++digits;
      }
      if (digits == 0)
        fail(fmt::format("expected a dimension (an integer >= 0) at offset {}", pos_));
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long literals
      out.push_back(value);
      if (out.size() > 64) fail("more than 64 dimensions");
      if (!peek(')')) expect(',');
    }
    expect(')');
    return out;
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
};

using Buffer = std::unique_ptr<char, void (*)(char*)>;

void free_buffer(char* p) { ::operator delete(p, kBufferAlignment); }

Buffer read_file(const std::string& path, size_t& size) {
  size = readable_file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  Buffer buffer(static_cast<char*>(::operator new(std::max<size_t>(size, 1), kBufferAlignment)),
                free_buffer);
  if (size > 0 && !in.read(buffer.get(), static_cast<std::streamsize>(size))) {
    throw ConfigError(path, "", "cannot read the file");
  }
  return buffer;
}

const ElementType& element_type(const std::string& path, const std::string& descr) {
  const char order = descr.empty() ? '\0' : descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    throw ConfigError(path, "",
                      fmt::format("unsupported dtype '{}' (supported: {})", descr, kSupported));
  }
  const std::string code = descr.substr(1);
  for (const auto& type : kTypes) {
    if (code != type.code) continue;
    if (type.size > 1 && order == '>') {
      throw ConfigError(
          path, "",
          fmt::format("big-endian data ('{}') is not supported; save it little-endian, "
                      "e.g. numpy.save(path, a.astype(a.dtype.newbyteorder('<')))",
                      descr));
    }
    if (type.size > 1 && order == '|') {
      throw ConfigError(
          path, "",
          fmt::format("dtype '{}' has no byte order though its elements have {} bytes", descr,
                      type.size));
    }
    return type;
  }
  throw ConfigError(path, "",
                    fmt::format("unsupported dtype '{}' (supported: {})", descr, kSupported));
}

}  // namespace

at::Tensor load_npy(const std::string& path) {
  size_t size = 0;
  Buffer buffer = read_file(path, size);
  const auto* bytes = reinterpret_cast<const unsigned char*>(buffer.get());
  if (size < kMagicSize + 4 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    throw ConfigError(path, "", "not a .npy file: it does not start with the \\x93NUMPY magic");
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw ConfigError(
        path, "",
        fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are)", major, minor));
  }
  size_t prefix = 10;
  size_t header_size = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
  if (major >= 2) {
    if (size < 12) throw ConfigError(path, "", "truncated .npy header");
    prefix = 12;
    header_size |= static_cast<size_t>(bytes[10]) << 16 | static_cast<size_t>(bytes[11]) << 24;
  }
  if (header_size > size - prefix) throw ConfigError(path, "", "truncated .npy header");
  const size_t data_offset = prefix + header_size;
  const Header header =
      HeaderParser(path, std::string_view(buffer.get() + prefix, header_size)).parse();
  const ElementType& type = element_type(path, header.descr);

  uint64_t numel = 1;
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel)) {
      throw ConfigError(path, "", "the shape's element count does not fit in 64 bits");
    }
  }
  uint64_t data_bytes = 0;
  if (__builtin_mul_overflow(numel, type.size, &data_bytes) || data_bytes != size - data_offset) {
    throw ConfigError(
        path, "",
        fmt::format("the header promises {} elements of {} bytes but the file holds {} "
                    "bytes of data",
                    numel, type.size, size - data_offset));
  }
  if (type.type == c10::ScalarType::Bool) {
    for (size_t i = data_offset; i < size; ++i) {
      if (bytes[i] > 1)
        throw ConfigError(path, "",
                          fmt::format("a bool element is {} (only 0 and 1 are)", bytes[i]));
    }
  }

  // An empty array's other dimensions may multiply past 64 bits although it holds nothing:
  // its strides are checked as its element count was. The last dimension's extent is no stride.
  const size_t rank = header.shape.size();
  std::vector<int64_t> strides(rank);
  int64_t stride = 1;
  for (size_t k = 0; k < rank; ++k) {
    const size_t i = header.fortran_order ? k : rank - 1 - k;
    strides[i] = stride;
    if (k + 1 < rank &&
        __builtin_mul_overflow(stride, std::max<int64_t>(header.shape[i], 1), &stride)) {
      throw ConfigError(path, "", "the shape's strides do not fit in 64 bits");
    }
  }
  const auto options = at::TensorOptions().dtype(type.type);
  // numpy pads the header so the data starts 64-byte aligned; another writer may not.
  if (data_offset % type.size == 0) {
    char* base = buffer.release();
    return at::from_blob(
        base + data_offset, header.shape, strides, [base](void*) { free_buffer(base); }, options);
  }
  at::Tensor copy = at::empty_strided(header.shape, strides, options);
  if (data_bytes > 0) std::memcpy(copy.data_ptr(), buffer.get() + data_offset, data_bytes);
  return copy;
}

}  // namespace mtc::bench
