// build_workload: walks the compiled spec depth first, in document order, drawing sizes from
// one structure stream and each tensor's values from a stream of its own, so that changing
// one tensor's values never shifts the shapes or values of the others.
#include "workload/workload.h"

#include <ATen/core/Tensor.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/ops/empty.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "shown.h"
#include "workload/detail/fill.h"
#include "workload/detail/json_checks.h"
#include "workload/detail/spec.h"
#include "workload/detail/tensor_spec_parser.h"
#include "workload/random.h"

namespace mtc::bench {
namespace {

using namespace detail;

// Stream 0 draws structure; tensor k (in build order) draws its values from stream k + 1.
constexpr uint64_t kStructureStream = 0;

class WorkloadBuilder {
 public:
  // `dry`: count only (count_workload): every node is walked and drawn as in a build, nothing
  // is allocated or kept, and every node builds to None.
  WorkloadBuilder(const Config& config, const BuildOptions& options, BuildInfo* info, bool dry)
      : checks_(config.file),
        options_(options),
        info_(info),
        dry_(dry),
        seed_(config.seed),
        structure_rng_(config.seed, kStructureStream) {}

  WorkloadTotals totals() const { return {nodes_, bytes_}; }

  c10::IValue build(const Node& node) {
    count_node(node.path);
    return std::visit([&](const auto& kind) { return build_kind(node, kind); }, node.kind);
  }

 private:
  c10::IValue build_kind(const Node&, const SequenceNode& seq) {
    std::vector<c10::IValue> items;
    if (seq.repeat) {
      const int64_t count = draw(*seq.repeat);
      if (count > options_.max_nodes - nodes_) {
        checks_.fail(seq.repeat->path,
                     fmt::format("repeat count {} exceeds the build limit of {} nodes", count,
                                 options_.max_nodes));
      }
      if (!dry_) items.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) keep(items, build(*seq.item));
    } else if (!seq.each.empty()) {
      const size_t count = seq.each.front().second.size();
      for (size_t i = 0; i < count; ++i) {
        const size_t scope = symbols_.size();
        for (const auto& [name, values] : seq.each) symbols_.emplace_back(name, draw(values[i]));
        keep(items, build(*seq.item));
        symbols_.resize(scope);
      }
    } else {
      for (const auto& item : seq.items) keep(items, build(*item));
    }
    if (dry_) return {};
    if (seq.tuple) return c10::ivalue::Tuple::create(std::move(items));
    c10::impl::GenericList list(c10::AnyType::get());
    list.reserve(items.size());
    for (auto& item : items) list.push_back(std::move(item));
    return list;
  }

  c10::IValue build_kind(const Node& node, const DictNode& dict_node) {
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    dict.reserve(dict_node.entries.size());
    for (const auto& [key, value] : dict_node.entries) {
      reserve_bytes(key.size(), node.path);  // each build makes its keys anew
      c10::IValue built = build(*value);
      if (!dry_) dict.insert(key, std::move(built));
    }
    return dry_ ? c10::IValue() : c10::IValue(dict);
  }

  c10::IValue build_kind(const Node& node, const TensorNode& tensor_node) {
    const TensorSpec& spec = tensor_node.spec;
    std::vector<int64_t> shape;
    shape.reserve(spec.shape.size());
    for (const auto& dim : spec.shape) shape.push_back(draw(dim));

    // The values fill a base allocation that the layout then views: swapped dimensions for a
    // transpose, a `step` times longer dimension for a strided slice.
    std::vector<int64_t> base_shape = shape;
    const Layout& layout = spec.layout;
    if (layout.kind == Layout::Kind::kTranspose)
      std::swap(base_shape[layout.dim0], base_shape[layout.dim1]);
    // As the parser checks a fixed shape: the bytes, and the bound for an empty tensor's extents
    // (tensor_spec_parser.cpp says why it is a little stricter than torch).
    uint64_t bytes = c10::elementSize(spec.dtype);
    uint64_t stride_span = 1;
    bool strides_overflow = false;
    bool overflow = false;
    if (layout.kind == Layout::Kind::kSlice) {
      overflow |=
          __builtin_mul_overflow(base_shape[layout.dim0], layout.step, &base_shape[layout.dim0]);
    }
    for (int64_t extent : base_shape) {
      overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(extent), &bytes);
      strides_overflow |=
          __builtin_mul_overflow(stride_span, std::max<uint64_t>(extent, 1), &stride_span);
    }
    strides_overflow |= stride_span > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (strides_overflow && !overflow && bytes <= kMaxTensorBytes)
      checks_.fail(node.path, "impossible size: its extents multiply past 2^63 (torch's strides)");
    if (overflow || bytes > kMaxTensorBytes) {
      checks_.fail(
          node.path,
          fmt::format("impossible size: drawn shape [{}] takes {} bytes (limit {})",
                      fmt::join(shape, ", "), overflow ? "more than 2^64" : std::to_string(bytes),
                      kMaxTensorBytes));
    }
    reserve_bytes(bytes, node.path);

    const Memory memory = effective(spec.memory, node.path);
    if (dry_) return {};
    auto options = at::TensorOptions().dtype(spec.dtype);
    if (memory.kind == Memory::Kind::kPinned) options = options.pinned_memory(true);
    at::Tensor base = at::empty(base_shape, options);
    Rng rng(seed_, kStructureStream + 1 + tensor_index_++);
    fill_values(base.data_ptr(), spec.dtype, base.numel(), spec.values, rng);
    if (memory.kind == Memory::Kind::kCuda)
      base = base.to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(memory.device)));

    if (layout.kind == Layout::Kind::kTranspose) return base.transpose(layout.dim0, layout.dim1);
    if (layout.kind == Layout::Kind::kSlice) {
      return base.slice(layout.dim0, 0, base_shape[layout.dim0], layout.step);
    }
    return base;
  }

  c10::IValue build_kind(const Node& node, const LoadedNode& loaded) {
    return copy_loaded(loaded.value, loaded.memory, node.path);
  }

  // A cycle picks its options in turn, one per instantiation.
  c10::IValue build_kind(const Node& node, const CycleNode& cycle) {
    uint64_t& position = cycle_positions_[&node];
    const NodePtr& option = cycle.options[position % cycle.options.size()];
    ++position;
    return build(*option);
  }

  c10::IValue build_kind(const Node&, const ChooseNode& choose) {
    const double x = structure_rng_.next_double() * choose.cumulative.back();
    const auto it = std::upper_bound(choose.cumulative.begin(), choose.cumulative.end(), x);
    const size_t index =
        std::min(static_cast<size_t>(it - choose.cumulative.begin()), choose.options.size() - 1);
    return build(*choose.options[index]);
  }

  c10::IValue build_kind(const Node&, const LetNode& let) {
    const size_t scope = symbols_.size();
    for (const auto& [name, count] : let.bindings) symbols_.emplace_back(name, draw(count));
    c10::IValue out = build(*let.body);
    symbols_.resize(scope);
    return out;
  }

  c10::IValue build_kind(const Node& node, const ValueNode& value) {
    return from_json(value.value, node.path);
  }

  // Each element of a literal list or object counts as a node and a string's bytes as tensor
  // bytes do: a literal is built afresh each time, so a repeated large one costs what as many
  // nodes or bytes would.
  c10::IValue from_json(const Json& value, const std::string& path) {
    switch (value.type()) {
      case Json::value_t::boolean:
        return value.get<bool>();
      case Json::value_t::number_integer:
        return value.get<int64_t>();
      case Json::value_t::number_unsigned: {
        const uint64_t u = value.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return static_cast<int64_t>(u);
        return static_cast<double>(u);
      }
      case Json::value_t::number_float:
        return value.get<double>();
      case Json::value_t::string:
        reserve_bytes(value.get_ref<const std::string&>().size(), path);
        return value.get<std::string>();
      case Json::value_t::array: {
        c10::impl::GenericList list(c10::AnyType::get());
        for (const auto& item : value) {
          count_node(path);
          list.push_back(from_json(item, path));
        }
        return list;
      }
      case Json::value_t::object: {
        c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
        for (const auto& [key, item] : value.items()) {
          count_node(path);
          reserve_bytes(key.size(), path);  // a key is a string too, made once per build
          dict.insert(key, from_json(item, path));
        }
        return dict;
      }
      default:
        return c10::IValue();
    }
  }

  // New containers around the loaded tensors, so no two builds share a mutable list or dict.
  c10::IValue copy_loaded(const c10::IValue& value, const std::optional<Memory>& memory,
                          const std::string& path) {
    count_node(path);
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      reserve_bytes(static_cast<uint64_t>(tensor.numel()) * tensor.element_size(), path);
      if (!memory) return tensor;
      const Memory placed = effective(*memory, path);
      return dry_ ? tensor : place(tensor, placed);
    }
    if (value.isTuple()) {
      std::vector<c10::IValue> items;
      for (const auto& item : value.toTupleRef().elements())
        items.push_back(copy_loaded(item, memory, path));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    if (value.isList()) {
      c10::impl::GenericList list(value.toList().elementType());
      const auto source = value.toListRef();
      list.reserve(source.size());
      for (const auto& item : source) list.push_back(copy_loaded(item, memory, path));
      return list;
    }
    if (value.isGenericDict()) {
      const c10::impl::GenericDict source = value.toGenericDict();
      c10::impl::GenericDict dict(source.keyType(), source.valueType());
      dict.reserve(source.size());
      for (const auto& entry : source)
        dict.insert(entry.key(), copy_loaded(entry.value(), memory, path));
      return dict;
    }
    return value;
  }

  static at::Tensor place(const at::Tensor& tensor, const Memory& memory) {
    switch (memory.kind) {
      case Memory::Kind::kPageable:
        return tensor.is_cuda() ? tensor.cpu() : tensor;
      case Memory::Kind::kPinned:
        return tensor.is_cuda() ? tensor.cpu().pin_memory() : tensor.pin_memory();
      case Memory::Kind::kCuda:
        return tensor.to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(memory.device)));
    }
    return tensor;
  }

  // Pinned and cuda:N need CUDA; without it the leaf becomes pageable and the build says so.
  Memory effective(const Memory& requested, const std::string& path) {
    if (requested.kind == Memory::Kind::kPageable) return requested;
    if (!options_.cuda_available) {
      if (info_ != nullptr) ++info_->demoted[requested.name()];
      return Memory{};
    }
    if (requested.kind == Memory::Kind::kCuda) {
      if (device_count_ < 0) device_count_ = at::detail::getCUDAHooks().deviceCount();
      if (requested.device >= device_count_) {
        checks_.fail(path,
                     fmt::format("memory {} names a device that does not exist ({} CUDA device{})",
                                 requested.name(), device_count_, device_count_ == 1 ? "" : "s"));
      }
    }
    return requested;
  }

  void count_node(const std::string& path) {
    if (++nodes_ > options_.max_nodes) {
      checks_.fail(path, fmt::format("the workload has more than {} nodes (the build limit)",
                                     options_.max_nodes));
    }
  }

  void reserve_bytes(uint64_t bytes, const std::string& path) {
    if (bytes > options_.max_bytes - std::min(bytes_, options_.max_bytes)) {
      checks_.fail(path, fmt::format("the workload needs more than {} bytes of tensors and literal "
                                     "strings ({})",
                                     options_.max_bytes, options_.max_bytes_origin));
    }
    bytes_ += bytes;
  }

  int64_t draw(const CountDist& count) {
    switch (count.kind) {
      case CountDist::Kind::kFixed:
        return count.lo;
      case CountDist::Kind::kSymbol:
        for (auto it = symbols_.rbegin(); it != symbols_.rend(); ++it) {
          if (it->first == count.symbol) return it->second;
        }
        checks_.fail(count.path, fmt::format("unknown symbol '{}'", shown(count.symbol)));
      case CountDist::Kind::kUniform:
        return uniform_int(structure_rng_, count.lo, count.hi);
      case CountDist::Kind::kChoice:
        return count.choices[static_cast<size_t>(
            uniform_int(structure_rng_, 0, static_cast<int64_t>(count.choices.size()) - 1))];
      case CountDist::Kind::kNormal:
        return round_clamped(count.mean + count.stddev * standard_normal(structure_rng_), count.lo,
                             count.hi);
      case CountDist::Kind::kPoisson:
        return std::clamp(poisson(structure_rng_, count.mean), count.lo, count.hi);
    }
    return 0;
  }

  void keep(std::vector<c10::IValue>& items, c10::IValue item) const {
    if (!dry_) items.push_back(std::move(item));
  }

  JsonChecks checks_;
  const BuildOptions& options_;
  BuildInfo* info_;
  bool dry_;
  uint64_t seed_;
  Rng structure_rng_;
  uint64_t tensor_index_ = 0;
  int64_t nodes_ = 0;
  uint64_t bytes_ = 0;
  int device_count_ = -1;
  std::vector<std::pair<std::string, int64_t>> symbols_;  // innermost binding last
  std::unordered_map<const Node*, uint64_t> cycle_positions_;
};

const Node& root_of(const Config& config) {
  if (!config.workload || !config.workload->root) {
    throw ConfigError(config.file, "",
                      "the config has no workload (it was not loaded with load_config)");
  }
  return *config.workload->root;
}

}  // namespace

c10::IValue build_workload(const Config& config, const BuildOptions& options) {
  return build_workload(config, options, nullptr);
}

c10::IValue build_workload(const Config& config, const BuildOptions& options, BuildInfo* info) {
  WorkloadBuilder builder(config, options, info, false);
  return builder.build(root_of(config));
}

WorkloadTotals count_workload(const Config& config, const BuildOptions& options) {
  WorkloadBuilder builder(config, options, nullptr, true);
  builder.build(root_of(config));
  return builder.totals();
}

}  // namespace mtc::bench
