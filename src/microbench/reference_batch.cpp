#include "reference_batch.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/remainder.h>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>

namespace mtc::microbench {
namespace {

struct BaseConfig {
  int64_t gt;
  std::array<int64_t, 6> per_camera;
};

constexpr std::array<BaseConfig, 4> kBaseConfigs{{
    {60, {30, 20, 40, 10, 50, 20}},
    {100, {60, 40, 30, 70, 20, 50}},
    {45, {10, 20, 10, 30, 20, 10}},
    {120, {80, 50, 60, 40, 70, 30}},
}};

// Distinct, non-zero values per tensor so a misplaced byte shows up in verification.
at::Tensor values(at::IntArrayRef shape, at::ScalarType dtype, int64_t& seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  at::Tensor t = at::arange(seed, seed + numel, at::TensorOptions().dtype(at::kLong));
  seed += numel + 7;
  if (dtype == at::kBool) return at::remainder(t, 2).to(at::kBool).reshape(shape);
  if (dtype == at::kFloat) return at::mul(t.to(at::kFloat), 0.25).reshape(shape);
  return t.reshape(shape).to(dtype);
}

// One sample: 6 camera dicts of 5 tensors and a ground-truth dict of 3.
c10::impl::GenericDict make_sample(const BaseConfig& config, const c10::TypePtr& tensor_type,
                                   const std::function<c10::IValue(const char*)>& key,
                                   int64_t& seed) {
  c10::impl::GenericList cameras(c10::AnyType::get());
  for (int64_t n : config.per_camera) {
    c10::impl::GenericDict cam(c10::StringType::get(), tensor_type);
    cam.insert(key("bounding_boxes"), values({n, 4}, at::kFloat, seed));
    cam.insert(key("class_ids"), values({n}, at::kLong, seed));
    cam.insert(key("active"), values({n}, at::kBool, seed));
    cam.insert(key("depths"), values({n}, at::kFloat, seed));
    cam.insert(key("proj_mat"), values({3, 4}, at::kFloat, seed));
    cameras.push_back(cam);
  }
  c10::impl::GenericDict gt(c10::StringType::get(), tensor_type);
  gt.insert(key("bounding_boxes_3d"), values({config.gt, 7}, at::kFloat, seed));
  gt.insert(key("class_ids"), values({config.gt}, at::kLong, seed));
  gt.insert(key("active"), values({config.gt}, at::kBool, seed));
  c10::impl::GenericDict sample(c10::StringType::get(), c10::AnyType::get());
  sample.insert(key("cams_gt"), cameras);
  sample.insert(key("gt_data"), gt);
  return sample;
}

}  // namespace

c10::IValue make_reference_batch(int repeat, bool shared_keys, bool any_values) {
  // Dicts of tensors typed Dict[str, Tensor] (a reference-counted type), or Dict[str, Any].
  const c10::TypePtr tensor_type =
      any_values ? c10::TypePtr(c10::AnyType::get()) : c10::TypePtr(c10::TensorType::get());
  // Each insert makes a key of its own (as a batch built key by key would have), or every dict
  // uses the same key objects.
  std::map<std::string, c10::IValue> keys;
  auto key = [&](const char* k) -> c10::IValue {
    if (!shared_keys) return std::string(k);
    auto it = keys.find(k);
    if (it == keys.end()) it = keys.emplace(k, std::string(k)).first;
    return it->second;
  };
  c10::impl::GenericList samples(c10::AnyType::get());
  int64_t seed = 1;
  for (int r = 0; r < 4 * repeat; ++r) {
    for (const BaseConfig& config : kBaseConfigs)
      samples.push_back(make_sample(config, tensor_type, key, seed));
  }
  return samples;
}

const c10::IValue& shared_reference_batch(int repeat, bool shared_keys, bool any_values) {
  static std::map<std::tuple<int, bool, bool>, c10::IValue> batches;
  const std::tuple<int, bool, bool> key{repeat, shared_keys, any_values};
  auto it = batches.find(key);
  if (it == batches.end())
    it = batches.emplace(key, make_reference_batch(repeat, shared_keys, any_values)).first;
  return it->second;
}

c10::IValue make_mixed_batch() {
  const auto key = [](const char* k) -> c10::IValue { return std::string(k); };
  c10::impl::GenericList samples(c10::AnyType::get());
  int64_t seed = 1;
  for (int s = 0; s < kMixedSamples; ++s) {
    c10::impl::GenericDict sample =
        make_sample(kBaseConfigs[static_cast<size_t>(s) % kBaseConfigs.size()],
                    c10::TensorType::get(), key, seed);
    c10::IValue depth_map;
    if (s % kMixedLargeEvery == 0) depth_map = values({512, 1024}, at::kFloat, seed);
    sample.insert(std::string("depth_map"), depth_map);
    samples.push_back(sample);
  }
  return samples;
}

}  // namespace mtc::microbench
