// Type twins: the output containers' element types equal the input's but are objects of the
// walking copier's own, so that containers built or freed on different threads at once do not
// share a reference count (type_twins.h).
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "detail/type_twins.h"
#include "structure_test_support.h"

namespace mtc::detail {
namespace {

using structure_test::expect_copied;
using structure_test::tensor_of;

// Restores the switch however a test ends.
struct TwinsOn {
  explicit TwinsOn(bool on) { TypeTwins::set_enabled(on); }
  ~TwinsOn() { TypeTwins::set_enabled(true); }
};

TEST(TypeTwins, TensorTypeGetsAnEqualObjectOfItsOwnOncePerCopier) {
  TypeTwins twins;
  const c10::TypePtr original = c10::TensorType::get();
  const c10::TypePtr twin = twins.twin(original);
  EXPECT_NE(twin.get(), original.get());
  EXPECT_EQ(*twin, *original);
  EXPECT_EQ(twin->str(), original->str());
  EXPECT_EQ(twins.twin(original).get(), twin.get()) << "one twin per type and copier";
  TypeTwins other;
  EXPECT_NE(other.twin(original).get(), twin.get()) << "each copier makes its own";
}

TEST(TypeTwins, TensorPropertiesAreKept) {
  TypeTwins twins;
  const c10::TypePtr typed = c10::TensorType::get()->withRequiresGrad(true);
  const c10::TypePtr twin = twins.twin(typed);
  EXPECT_NE(twin.get(), typed.get());
  EXPECT_EQ(*twin, *typed);
  EXPECT_NE(*twin, *c10::TensorType::get());
}

TEST(TypeTwins, ContainerTypesAreTwinnedWithTheirContents) {
  TypeTwins twins;
  const c10::TypePtr list = c10::ListType::ofTensors();
  const c10::TypePtr list_twin = twins.twin(list);
  EXPECT_NE(list_twin.get(), list.get());
  EXPECT_EQ(*list_twin, *list);
  // The element is the copier's twin of TensorType, not the process's.
  EXPECT_EQ(list_twin->containedTypes()[0].get(), twins.twin(c10::TensorType::get()).get());

  const c10::TypePtr dict = c10::DictType::create(c10::StringType::get(), list);
  const c10::TypePtr dict_twin = twins.twin(dict);
  EXPECT_NE(dict_twin.get(), dict.get());
  EXPECT_EQ(*dict_twin, *dict);
  const c10::TypePtr optional = c10::OptionalType::ofTensor();
  EXPECT_EQ(*twins.twin(optional), *optional);
}

TEST(TypeTwins, SingletonsAndOtherKindsStayThemselves) {
  TypeTwins twins;
  for (const c10::TypePtr& type :
       {c10::TypePtr(c10::AnyType::get()), c10::TypePtr(c10::StringType::get()),
        c10::TypePtr(c10::IntType::get()),
        c10::TypePtr(c10::TupleType::create({c10::TensorType::get()}))}) {
    SCOPED_TRACE(type->str());
    EXPECT_EQ(twins.twin(type).get(), type.get());
  }
}

TEST(TypeTwins, OffGivesEveryTypeItself) {
  const TwinsOn off(false);
  TypeTwins twins;
  EXPECT_EQ(twins.twin(c10::TensorType::get()).get(), c10::TensorType::get().get());
}

// What typed code reads from a copy of a Dict[str, Tensor] and a List[Tensor]: the same types by
// value, so conversion to the typed containers works, on objects that are not the process's.
TEST(TypeTwins, CopiedTypedContainersConvertToTheirTypedForms) {
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("a", tensor_of(1));
  dict.insert("b", tensor_of(2));
  c10::List<at::Tensor> list({tensor_of(3), tensor_of(4)});
  c10::impl::GenericList root(c10::AnyType::get());
  root.push_back(dict);
  root.push_back(list);
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "twins on" : "twins off");
    const TwinsOn setting(on);
    const c10::IValue out = expect_copied(root);
    const c10::IValue out_dict = out.toListRef()[0];
    const c10::IValue out_list = out.toListRef()[1];
    EXPECT_EQ(out_dict.toGenericDict().valueType().get() == c10::TensorType::get().get(), !on);
    EXPECT_EQ(out_list.toList().elementType().get() == c10::TensorType::get().get(), !on);
    const auto typed = out_dict.to<c10::Dict<std::string, at::Tensor>>();
    EXPECT_EQ(typed.size(), 2u);
    EXPECT_EQ(out_list.to<c10::List<at::Tensor>>().size(), 2u);
    EXPECT_EQ(*out_dict.type(), *c10::IValue(dict).type());
  }
}

// The twins outlive the copier that made them: the containers hold them.
TEST(TypeTwins, ContainersKeepTheirTwinsAfterTheCopierIsGone) {
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("a", tensor_of(1));
  c10::IValue out;
  std::thread([&] { out = expect_copied(dict); }).join();
  const c10::TypePtr value_type = out.toGenericDict().valueType();
  EXPECT_NE(value_type.get(), c10::TensorType::get().get());
  EXPECT_EQ(value_type->str(), "Tensor");
  EXPECT_EQ(*value_type, *c10::TensorType::get());
}

}  // namespace
}  // namespace mtc::detail
