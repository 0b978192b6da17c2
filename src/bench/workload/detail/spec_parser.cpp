#include "workload/detail/spec_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "shown.h"
#include "workload/detail/loaded_node_parser.h"
#include "workload/detail/tensor_spec_parser.h"

namespace mtc::bench::detail {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& node_kinds() {
  static const std::vector<std::string> kinds{"list",  "tuple",  "dict", "tensor", "npy",  "pt",
                                              "cycle", "choose", "let",  "ref",    "value"};
  return kinds;
}

using SymbolUses = std::map<std::string, std::string>;

// Adds the symbols of `from` not in `bound`; the first use found is the one reported.
void absorb(SymbolUses& into, const SymbolUses& from, const std::set<std::string>& bound = {}) {
  for (const auto& [name, use] : from) {
    if (!bound.count(name)) into.emplace(name, use);
  }
}

void absorb_count(SymbolUses& into, const CountDist& count) {
  if (count.kind == CountDist::Kind::kSymbol) into.emplace(count.symbol, count.path);
}

class SpecCompiler {
 public:
  SpecCompiler(const JsonChecks& checks, const Json* defs, fs::path base_dir)
      : checks_(checks), defs_(defs), base_dir_(std::move(base_dir)) {}

  NodePtr compile(const Json& value, const std::string& path, int depth) {
    if (depth > kMaxNesting)
      checks_.fail(path, fmt::format("nesting deeper than {} levels", kMaxNesting));
    if (value.is_array()) {
      checks_.fail(path,
                   "a bare array is not a node: write {\"list\": [...]} or {\"tuple\": [...]}");
    }
    if (!value.is_object()) return literal(value, path);
    if (value.contains("let")) {
      checks_.allow_keys(value, path, {"let", "in"});
      checks_.require_key(value, path, "in");
      return let(value, path, depth);
    }
    if (value.contains("choose")) {
      checks_.allow_keys(value, path, {"choose", "weights"});
      return choose(value, path, depth);
    }
    const std::string kind = node_kind(value, path);
    const Json& body = value[kind];
    const std::string body_path = child_path(path, kind);
    if (kind == "list" || kind == "tuple")
      return sequence(body, path, body_path, kind == "tuple", depth);
    if (kind == "dict") return dict(body, path, body_path, depth);
    if (kind == "tensor") return tensor(body, path, body_path);
    if (kind == "npy" || kind == "pt") return loaded(body, path, body_path, kind == "npy");
    if (kind == "cycle") return cycle(body, path, body_path, depth);
    if (kind == "ref") return ref(body, body_path, depth);
    return passthrough(body, path);
  }

  NodePtr loaded(const Json& body, const std::string& path, const std::string& body_path,
                 bool npy) {
    LoadedNode loaded_node = parse_loaded(checks_, body, body_path, npy, base_dir_);
    if (std::find(files_.begin(), files_.end(), loaded_node.file) == files_.end())
      files_.push_back(loaded_node.file);
    auto node = make_node(path);
    node->kind = std::move(loaded_node);
    return node;
  }

  // The .npy and .pt files read so far, each once, in the order first read.
  std::vector<std::string> take_files() { return std::move(files_); }

  // Definitions nobody refers to are still checked, so a config never carries a broken one.
  void compile_unused_defs() {
    if (defs_ == nullptr) return;
    for (const auto& [name, unused] : defs_->items()) {
      if (!compiled_defs_.count(name)) compile_def(name, "/defs", 1);
    }
  }

 private:
  std::string node_kind(const Json& value, const std::string& path) const {
    std::vector<std::string> kinds;
    for (const auto& [key, unused] : value.items()) {
      if (std::count(node_kinds().begin(), node_kinds().end(), key)) kinds.push_back(key);
    }
    if (kinds.size() > 1)
      checks_.fail(path, fmt::format("a node has one kind; got {}", join(kinds)));
    if (kinds.empty()) {
      if (value.size() == 1) checks_.allow_keys(value, path, node_kinds());  // names the typo
      checks_.fail(path,
                   fmt::format("not a node: expected an object with one of the keys {}; got {}",
                               join(node_kinds()), brief(value)));
    }
    checks_.allow_keys(value, path, {kinds[0]});
    return kinds[0];
  }

  static std::shared_ptr<Node> make_node(const std::string& path) {
    auto node = std::make_shared<Node>();
    node->path = path;
    return node;
  }

  NodePtr literal(const Json& value, const std::string& path) {
    auto node = make_node(path);
    node->kind = ValueNode{value};
    return node;
  }

  NodePtr passthrough(const Json& body, const std::string& path) { return literal(body, path); }

  NodePtr sequence(const Json& body, const std::string& path, const std::string& body_path,
                   bool tuple, int depth) {
    auto node = make_node(path);
    SequenceNode seq;
    seq.tuple = tuple;
    if (body.is_array()) {
      for (size_t i = 0; i < body.size(); ++i) {
        seq.items.push_back(compile(body[i], child_path(body_path, i), depth + 1));
        absorb(node->free_symbols, seq.items.back()->free_symbols);
      }
      node->height = 1 + max_height(seq.items);
      node->kind = std::move(seq);
      return node;
    }
    if (!body.is_object()) {
      checks_.fail(body_path,
                   fmt::format("expected an array of items or an object with \"item\" and "
                               "\"repeat\" or \"for\"; got {}",
                               type_name(body)));
    }
    checks_.allow_keys(body, body_path, {"repeat", "for", "item"});
    checks_.require_key(body, body_path, "item");
    if (body.contains("repeat") == body.contains("for")) {
      checks_.fail(body_path,
                   "give exactly one of \"repeat\" (a count) or \"for\" (symbol values)");
    }
    std::set<std::string> bound;
    if (body.contains("repeat")) {
      seq.repeat = parse_count(checks_, body["repeat"], child_path(body_path, "repeat"));
      absorb_count(node->free_symbols, *seq.repeat);
    } else {
      const std::string for_path = child_path(body_path, "for");
      const Json& each = body["for"];
      checks_.expect_object(each, for_path);
      if (each.empty()) checks_.fail(for_path, "\"for\" needs at least one symbol");
      for (const auto& [name, values] : each.items()) {
        const std::string values_path = child_path(for_path, name);
        if (!is_symbol_name(name)) {
          checks_.fail(
              values_path,
              fmt::format("'{}' is not a symbol name ([A-Za-z_][A-Za-z0-9_]*)", shown(name)));
        }
        checks_.expect_array(values, values_path);
        if (!seq.each.empty() && values.size() != seq.each.front().second.size()) {
          checks_.fail(values_path,
                       fmt::format("{} values, but '{}' has {}: every symbol of \"for\" "
                                   "needs one value per item",
                                   values.size(), shown(seq.each.front().first),
                                   seq.each.front().second.size()));
        }
        std::vector<CountDist> counts;
        for (size_t i = 0; i < values.size(); ++i) {
          counts.push_back(parse_count(checks_, values[i], child_path(values_path, i)));
          absorb_count(node->free_symbols, counts.back());
        }
        seq.each.emplace_back(name, std::move(counts));
        bound.insert(name);
      }
    }
    seq.item = compile(body["item"], child_path(body_path, "item"), depth + 1);
    absorb(node->free_symbols, seq.item->free_symbols, bound);
    node->height = 1 + seq.item->height;
    node->kind = std::move(seq);
    return node;
  }

  NodePtr dict(const Json& body, const std::string& path, const std::string& body_path, int depth) {
    checks_.expect_object(body, body_path);
    auto node = make_node(path);
    DictNode dict_node;
    int height = 0;
    for (const auto& [key, value] : body.items()) {
      dict_node.entries.emplace_back(key, compile(value, child_path(body_path, key), depth + 1));
      absorb(node->free_symbols, dict_node.entries.back().second->free_symbols);
      height = std::max(height, dict_node.entries.back().second->height);
    }
    node->height = 1 + height;
    node->kind = std::move(dict_node);
    return node;
  }

  NodePtr tensor(const Json& body, const std::string& path, const std::string& body_path) {
    auto node = make_node(path);
    TensorNode tensor_node{parse_tensor(checks_, body, body_path)};
    for (const auto& dim : tensor_node.spec.shape) absorb_count(node->free_symbols, dim);
    node->kind = std::move(tensor_node);
    return node;
  }

  std::vector<NodePtr> options(const Json& body, const std::string& body_path, int depth) {
    checks_.expect_array(body, body_path);
    if (body.empty()) checks_.fail(body_path, "the list of options is empty");
    std::vector<NodePtr> out;
    for (size_t i = 0; i < body.size(); ++i)
      out.push_back(compile(body[i], child_path(body_path, i), depth + 1));
    return out;
  }

  NodePtr cycle(const Json& body, const std::string& path, const std::string& body_path,
                int depth) {
    auto node = make_node(path);
    CycleNode cycle_node{options(body, body_path, depth)};
    for (const auto& option : cycle_node.options) absorb(node->free_symbols, option->free_symbols);
    node->height = 1 + max_height(cycle_node.options);
    node->kind = std::move(cycle_node);
    return node;
  }

  NodePtr choose(const Json& value, const std::string& path, int depth) {
    auto node = make_node(path);
    ChooseNode choose_node;
    choose_node.options = options(value["choose"], child_path(path, "choose"), depth);
    for (const auto& option : choose_node.options) absorb(node->free_symbols, option->free_symbols);
    const std::string weights_path = child_path(path, "weights");
    double total = 0.0;
    for (size_t i = 0; i < choose_node.options.size(); ++i) {
      double weight = 1.0;
      if (value.contains("weights")) {
        const Json& weights = value["weights"];
        checks_.expect_array(weights, weights_path);
        if (weights.size() != choose_node.options.size()) {
          checks_.fail(weights_path, fmt::format("{} weights for {} options", weights.size(),
                                                 choose_node.options.size()));
        }
        weight = checks_.get_number(weights[i], child_path(weights_path, i), 0.0, 1e300);
      }
      total += weight;
      choose_node.cumulative.push_back(total);
    }
    if (!(total > 0.0) || !std::isfinite(total)) {
      checks_.fail(weights_path, "the weights must have a positive, finite sum");
    }
    node->height = 1 + max_height(choose_node.options);
    node->kind = std::move(choose_node);
    return node;
  }

  NodePtr let(const Json& value, const std::string& path, int depth) {
    auto node = make_node(path);
    LetNode let_node;
    const std::string let_path = child_path(path, "let");
    const Json& bindings = value["let"];
    checks_.expect_object(bindings, let_path);
    std::set<std::string> bound;
    for (const auto& [name, count] : bindings.items()) {
      const std::string binding_path = child_path(let_path, name);
      if (!is_symbol_name(name)) {
        checks_.fail(binding_path, fmt::format("'{}' is not a symbol name ([A-Za-z_][A-Za-z0-9_]*)",
                                               shown(name)));
      }
      let_node.bindings.emplace_back(name, parse_count(checks_, count, binding_path));
      // A binding may use the ones before it in the same "let".
      SymbolUses uses;
      absorb_count(uses, let_node.bindings.back().second);
      absorb(node->free_symbols, uses, bound);
      bound.insert(name);
    }
    let_node.body = compile(value["in"], child_path(path, "in"), depth + 1);
    absorb(node->free_symbols, let_node.body->free_symbols, bound);
    node->height = 1 + let_node.body->height;
    node->kind = std::move(let_node);
    return node;
  }

  NodePtr ref(const Json& body, const std::string& body_path, int depth) {
    const std::string name = checks_.get_string(body, body_path);
    if (defs_ == nullptr || !defs_->contains(name)) {
      std::vector<std::string> names;
      if (defs_ != nullptr) {
        for (const auto& [def_name, unused] : defs_->items()) names.push_back(def_name);
      }
      const std::string guess = closest_name(name, names);
      checks_.fail(
          body_path,
          fmt::format("unknown definition '{}'{}; defined in \"defs\": {}", shown(name),
                      guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", shown(guess)),
                      names.empty() ? "none" : shown_list(names)));
    }
    return compile_def(name, body_path, depth);
  }

  // Each definition compiles once and is shared by its uses; a cycle node inside it therefore
  // keeps one counter across all uses.
  NodePtr compile_def(const std::string& name, const std::string& use_path, int depth) {
    if (auto found = compiled_defs_.find(name); found != compiled_defs_.end()) return found->second;
    if (std::count(in_progress_.begin(), in_progress_.end(), name)) {
      std::vector<std::string> chain(std::find(in_progress_.begin(), in_progress_.end(), name),
                                     in_progress_.end());
      chain.push_back(name);
      // The chain is a path through the definitions: shown as paths are.
      checks_.fail(use_path, fmt::format("definition '{}' refers to itself ({})", shown(name),
                                         shown_path(join(chain, " -> "))));
    }
    in_progress_.push_back(name);
    NodePtr node = compile((*defs_)[name], child_path("/defs", name), depth + 1);
    in_progress_.pop_back();
    compiled_defs_.emplace(name, node);
    return node;
  }

  static int max_height(const std::vector<NodePtr>& nodes) {
    int height = 0;
    for (const auto& n : nodes) height = std::max(height, n->height);
    return height;
  }

  const JsonChecks& checks_;
  const Json* defs_;
  fs::path base_dir_;
  std::map<std::string, NodePtr> compiled_defs_;
  std::vector<std::string> in_progress_;
  std::vector<std::string> files_;
};

}  // namespace

std::shared_ptr<const WorkloadSpec> compile_spec(const JsonChecks& checks, const Json& structure,
                                                 const std::string& path, const Json* defs,
                                                 const std::filesystem::path& base_dir) {
  if (defs != nullptr) checks.expect_object(*defs, "/defs");
  SpecCompiler compiler(checks, defs, base_dir);
  auto spec = std::make_shared<WorkloadSpec>();
  spec->root = compiler.compile(structure, path, 0);
  compiler.compile_unused_defs();
  spec->data_files = compiler.take_files();
  if (!spec->root->free_symbols.empty()) {
    const auto& [name, use] = *spec->root->free_symbols.begin();
    checks.fail(
        use,
        fmt::format("unknown symbol '{}': bind it with {{\"let\": {{\"{}\": ...}}, \"in\": ...}} "
                    "or a list's \"for\" in an enclosing node",
                    shown(name), shown(name)));
  }
  // Definitions used inside definitions nest deeper than any one of them; the builder recurses
  // that deep, so the expanded depth is bounded too.
  if (spec->root->height > kMaxNesting) {
    checks.fail(path, fmt::format("nesting deeper than {} levels once definitions are expanded",
                                  kMaxNesting));
  }
  return spec;
}

std::shared_ptr<const WorkloadSpec> compile_input(const JsonChecks& checks, const Json& input,
                                                  const std::string& path,
                                                  const std::filesystem::path& base_dir) {
  SpecCompiler compiler(checks, nullptr, base_dir);
  auto spec = std::make_shared<WorkloadSpec>();
  spec->root = compiler.loaded(input, path, path, /*npy=*/false);
  spec->data_files = compiler.take_files();
  return spec;
}

}  // namespace mtc::bench::detail
