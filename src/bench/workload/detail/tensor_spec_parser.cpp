#include "workload/detail/tensor_spec_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "shown.h"

namespace mtc::bench::detail {
namespace {

constexpr int kMaxCudaDevice = 1023;

struct DtypeEntry {
  const char* name;
  c10::ScalarType type;
};
constexpr std::array<DtypeEntry, 12> kDtypes{{
    {"bool", c10::ScalarType::Bool},
    {"uint8", c10::ScalarType::Byte},
    {"int8", c10::ScalarType::Char},
    {"int16", c10::ScalarType::Short},
    {"int32", c10::ScalarType::Int},
    {"int64", c10::ScalarType::Long},
    {"float16", c10::ScalarType::Half},
    {"bfloat16", c10::ScalarType::BFloat16},
    {"float32", c10::ScalarType::Float},
    {"float64", c10::ScalarType::Double},
    {"complex64", c10::ScalarType::ComplexFloat},
    {"complex128", c10::ScalarType::ComplexDouble},
}};

}  // namespace

std::string Memory::name() const {
  switch (kind) {
    case Kind::kPageable:
      return "pageable";
    case Kind::kPinned:
      return "pinned";
    case Kind::kCuda:
      return "cuda:" + std::to_string(device);
  }
  return "pageable";
}

std::optional<c10::ScalarType> dtype_from_name(const std::string& name) {
  for (const auto& entry : kDtypes) {
    if (name == entry.name) return entry.type;
  }
  return std::nullopt;
}

std::string dtype_name(c10::ScalarType dtype) {
  for (const auto& entry : kDtypes) {
    if (dtype == entry.type) return entry.name;
  }
  return c10::toString(dtype);
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : kDtypes) out.emplace_back(entry.name);
    return out;
  }();
  return names;
}

Memory parse_memory(const JsonChecks& checks, const Json& value, const std::string& path) {
  const std::string text = checks.get_string(value, path);
  Memory memory;
  if (text == "pageable") return memory;
  if (text == "pinned") {
    memory.kind = Memory::Kind::kPinned;
    return memory;
  }
  const std::string prefix = "cuda:";
  if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size() &&
      text.size() <= prefix.size() + 4) {
    int device = 0;
    bool digits = true;
    for (size_t i = prefix.size(); i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') digits = false;
      device = device * 10 + (text[i] - '0');
    }
    if (digits && device <= kMaxCudaDevice) {
      memory.kind = Memory::Kind::kCuda;
      memory.device = device;
      return memory;
    }
  }
  checks.fail(path, fmt::format("unknown memory kind '{}'; expected pageable, pinned or cuda:N "
                                "(N a device index, e.g. cuda:0)",
                                shown(text)));
}

Layout parse_layout(const JsonChecks& checks, const Json& value, const std::string& path,
                    size_t rank) {
  Layout layout;
  if (value.is_string()) {
    if (value.get<std::string>() != "contiguous") {
      checks.fail(path, fmt::format("unknown layout '{}'; expected \"contiguous\", "
                                    "{{\"transpose\": [d0, d1]}} or {{\"slice\": {{\"dim\": d, "
                                    "\"step\": s}}}}",
                                    shown(value.get<std::string>())));
    }
    return layout;
  }
  checks.expect_object(value, path);
  const auto [kind, body_ptr] =
      checks.single_member(value, path, {"transpose", "slice"}, "a layout");
  const Json& body = *body_ptr;
  const std::string body_path = child_path(path, kind);
  const auto r = static_cast<int64_t>(rank);
  auto dimension = [&](const Json& dim, const std::string& dim_path) {
    if (r == 0) checks.fail(dim_path, "a 0-dimensional tensor has no dimension to lay out");
    const int64_t d = checks.get_int(dim, dim_path, -r, r - 1);
    return d < 0 ? d + r : d;
  };
  if (kind == "transpose") {
    layout.kind = Layout::Kind::kTranspose;
    if (!body.is_array() || body.size() != 2) {
      checks.fail(body_path, fmt::format("expected [d0, d1], got {}", brief(body)));
    }
    layout.dim0 = dimension(body[0], child_path(body_path, size_t{0}));
    layout.dim1 = dimension(body[1], child_path(body_path, size_t{1}));
    if (layout.dim0 == layout.dim1) {
      checks.fail(body_path, "the two dimensions are the same: the tensor would stay contiguous");
    }
  } else {
    layout.kind = Layout::Kind::kSlice;
    checks.expect_object(body, body_path);
    checks.allow_keys(body, body_path, {"dim", "step"});
    checks.require_key(body, body_path, "dim");
    checks.require_key(body, body_path, "step");
    layout.dim0 = dimension(body["dim"], child_path(body_path, "dim"));
    layout.step = checks.get_int(body["step"], child_path(body_path, "step"), 1, 1 << 20);
  }
  return layout;
}

TensorSpec parse_tensor(const JsonChecks& checks, const Json& value, const std::string& path) {
  checks.expect_object(value, path);
  checks.allow_keys(value, path, {"dtype", "shape", "values", "memory", "layout"});
  checks.require_key(value, path, "dtype");
  checks.require_key(value, path, "shape");
  TensorSpec spec;
  const std::string dtype_path = child_path(path, "dtype");
  const std::string dtype_text = checks.get_string(value["dtype"], dtype_path);
  const auto dtype = dtype_from_name(dtype_text);
  if (!dtype) {
    const std::string guess = closest_name(dtype_text, dtype_names());
    checks.fail(dtype_path,
                fmt::format("unknown dtype '{}'{}; supported: {}", shown(dtype_text),
                            guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess),
                            join(dtype_names())));
  }
  spec.dtype = *dtype;

  const std::string shape_path = child_path(path, "shape");
  const Json& shape = value["shape"];
  checks.expect_array(shape, shape_path);
  if (shape.size() > kMaxRank) {
    checks.fail(shape_path,
                fmt::format("{} dimensions; at most {} are supported", shape.size(), kMaxRank));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    spec.shape.push_back(parse_count(checks, shape[i], child_path(shape_path, i)));
  }
  spec.values = value.contains("values")
                    ? parse_values(checks, value["values"], child_path(path, "values"), spec.dtype)
                    : default_values(spec.dtype);
  if (value.contains("memory"))
    spec.memory = parse_memory(checks, value["memory"], child_path(path, "memory"));
  if (value.contains("layout")) {
    spec.layout =
        parse_layout(checks, value["layout"], child_path(path, "layout"), spec.shape.size());
  }

  // A size known now that no machine could hold is a mistake in the config, not a runtime event.
  // An empty tensor holds nothing, yet torch refuses one whose extents after the first, each taken
  // as at least 1, multiply past 2^63 (its strides), or whose extents in order multiply past 2^64
  // before the 0 (its storage size). One bound for both, every extent taken as at least 1 below
  // 2^63, refuses a few shapes torch would take (such as [3, 2^62, 0]): none a config needs.
  uint64_t bytes = c10::elementSize(spec.dtype);
  uint64_t stride_span = 1;
  bool strides_overflow = false;
  bool overflow = false;
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    if (spec.shape[i].kind != CountDist::Kind::kFixed) return spec;
    uint64_t extent = static_cast<uint64_t>(spec.shape[i].lo);
    if (spec.layout.kind == Layout::Kind::kSlice && static_cast<int64_t>(i) == spec.layout.dim0) {
      overflow |= __builtin_mul_overflow(extent, static_cast<uint64_t>(spec.layout.step), &extent);
    }
    overflow |= __builtin_mul_overflow(bytes, extent, &bytes);
    strides_overflow |=
        __builtin_mul_overflow(stride_span, std::max<uint64_t>(extent, 1), &stride_span);
  }
  strides_overflow |= stride_span > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (strides_overflow && !overflow && bytes <= kMaxTensorBytes)
    checks.fail(shape_path, "impossible size: its extents multiply past 2^63 (torch's strides)");
  if (overflow || bytes > kMaxTensorBytes) {
    checks.fail(shape_path,
                fmt::format("impossible size: the tensor would take {} bytes (limit {})",
                            overflow ? std::string("more than 2^64") : std::to_string(bytes),
                            kMaxTensorBytes));
  }
  return spec;
}

}  // namespace mtc::bench::detail
