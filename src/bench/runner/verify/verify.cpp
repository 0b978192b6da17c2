#include "runner/verify/verify.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <cstring>

namespace mtc::bench {
namespace {

class Verifier {
 public:
  explicit Verifier(const c10::Device& target) : target_(target) {}

  std::optional<Mismatch> check(const c10::IValue& in, const c10::IValue& out,
                                const std::string& path) {
    if (in.isTensor()) return check_tensor(in.toTensor(), out, path);
    if (in.isList()) return check_list(in, out, path);
    if (in.isTuple()) return check_tuple(in, out, path);
    if (in.isGenericDict()) return check_dict(in, out, path);
    return check_leaf(in, out, path);
  }

 private:
  static std::optional<Mismatch> kind_mismatch(const c10::IValue& in, const c10::IValue& out,
                                               const std::string& path) {
    return Mismatch{path, fmt::format("a {}, expected a {}", out.tagKind(), in.tagKind())};
  }

  static std::string child(const std::string& path, const std::string& key) {
    return path == "/" ? "/" + key : path + "/" + key;
  }

  std::optional<Mismatch> check_tensor(const at::Tensor& in, const c10::IValue& out_value,
                                       const std::string& path) {
    if (!out_value.isTensor()) return kind_mismatch(c10::IValue(in), out_value, path);
    const at::Tensor& out = out_value.toTensor();
    if (!out.defined() || !in.defined()) {
      if (out.defined() != in.defined()) return Mismatch{path, "undefined tensor mismatch"};
      return std::nullopt;
    }
    if (out.scalar_type() != in.scalar_type()) {
      return Mismatch{path, fmt::format("dtype {}, expected {}", c10::toString(out.scalar_type()),
                                        c10::toString(in.scalar_type()))};
    }
    if (out.sizes() != in.sizes()) {
      return Mismatch{
          path, fmt::format("shape {}, expected {}", c10::str(out.sizes()), c10::str(in.sizes()))};
    }
    if (out.device() != target_) {
      return Mismatch{path, fmt::format("on {}, expected {}", out.device().str(), target_.str())};
    }
    if (out.layout() != at::kStrided || in.layout() != at::kStrided) {
      return Mismatch{path, "only strided tensors can be compared"};
    }
    const at::Tensor a = in.cpu().contiguous();
    const at::Tensor b = out.cpu().contiguous();
    if (a.nbytes() > 0 && std::memcmp(a.const_data_ptr(), b.const_data_ptr(), a.nbytes()) != 0) {
      const auto* pa = static_cast<const unsigned char*>(a.const_data_ptr());
      const auto* pb = static_cast<const unsigned char*>(b.const_data_ptr());
      size_t first = 0;
      while (pa[first] == pb[first]) ++first;
      return Mismatch{path,
                      fmt::format("values differ (first at byte {} of {})", first, a.nbytes())};
    }
    return std::nullopt;
  }

  std::optional<Mismatch> check_list(const c10::IValue& in, const c10::IValue& out,
                                     const std::string& path) {
    if (!out.isList()) return kind_mismatch(in, out, path);
    const auto a = in.toList();
    const auto b = out.toList();
    if (a.size() != b.size()) {
      return Mismatch{path, fmt::format("list of {} items, expected {}", b.size(), a.size())};
    }
    if (*a.elementType() != *b.elementType()) {
      return Mismatch{path, fmt::format("list of {}, expected list of {}", b.elementType()->str(),
                                        a.elementType()->str())};
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (auto m = check(a.get(i), b.get(i), child(path, std::to_string(i)))) return m;
    }
    return std::nullopt;
  }

  std::optional<Mismatch> check_tuple(const c10::IValue& in, const c10::IValue& out,
                                      const std::string& path) {
    if (!out.isTuple()) return kind_mismatch(in, out, path);
    const auto& a = in.toTupleRef().elements();
    const auto& b = out.toTupleRef().elements();
    if (a.size() != b.size()) {
      return Mismatch{path, fmt::format("tuple of {} items, expected {}", b.size(), a.size())};
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (auto m = check(a[i], b[i], child(path, std::to_string(i)))) return m;
    }
    return std::nullopt;
  }

  std::optional<Mismatch> check_dict(const c10::IValue& in, const c10::IValue& out,
                                     const std::string& path) {
    if (!out.isGenericDict()) return kind_mismatch(in, out, path);
    const auto a = in.toGenericDict();
    const auto b = out.toGenericDict();
    if (a.size() != b.size()) {
      return Mismatch{path, fmt::format("dict of {} entries, expected {}", b.size(), a.size())};
    }
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end(); ++ia, ++ib) {
      const std::string key = key_text(ia->key());
      if (!(ia->key() == ib->key())) {
        return Mismatch{path, fmt::format("key '{}', expected '{}' (same keys, same order)",
                                          key_text(ib->key()), key)};
      }
      if (auto m = check(ia->value(), ib->value(), child(path, key))) return m;
    }
    return std::nullopt;
  }

  static std::string key_text(const c10::IValue& key) {
    if (key.isString()) return key.toStringRef();
    if (key.isInt()) return std::to_string(key.toInt());
    return key.tagKind();
  }

  static std::optional<Mismatch> check_leaf(const c10::IValue& in, const c10::IValue& out,
                                            const std::string& path) {
    if (in.tagKind() != out.tagKind()) return kind_mismatch(in, out, path);
    if (in.isNone()) return std::nullopt;
    if (in.isDouble()) {
      const double a = in.toDouble();
      const double b = out.toDouble();
      if (std::memcmp(&a, &b, sizeof a) == 0) return std::nullopt;  // NaN stays NaN
    } else if (in.isInt() || in.isBool() || in.isString()) {
      if (in == out) return std::nullopt;
    } else if (out.isSameIdentity(in)) {
      return std::nullopt;  // other leaves pass through as they are
    }
    return Mismatch{path, fmt::format("{} leaf differs", in.tagKind())};
  }

  c10::Device target_;
};

}  // namespace

std::optional<Mismatch> verify_copy(const c10::IValue& input, const c10::IValue& output,
                                    const c10::Device& target) {
  return Verifier(target).check(input, output, "/");
}

}  // namespace mtc::bench
