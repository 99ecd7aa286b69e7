#include "gradlab/autograd/graph.hpp"

#include <functional>
#include <sstream>
#include <unordered_map>

#include "gradlab/autograd/node.hpp"
#include "gradlab/core/tensor_impl.hpp"

namespace gradlab::autograd {

namespace {

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

// Visits every node once, parents before children (DFS from the root).
void walk(const std::shared_ptr<Node>& root, const std::function<void(Node*, size_t)>& visit) {
  std::unordered_map<Node*, size_t> ids;
  std::function<void(Node*)> rec = [&](Node* n) {
    if (ids.count(n)) return;
    ids[n] = ids.size();
    visit(n, ids[n]);
    for (const Edge& e : n->next_edges())
      if (e.valid()) rec(e.fn.get());
  };
  if (root) rec(root.get());
}

}  // namespace

std::string to_dot(const Tensor& root, const std::string& title) {
  std::ostringstream os;
  os << "digraph \"" << escape(title) << "\" {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n";
  std::unordered_map<Node*, std::string> names;
  Edge top = gradient_edge(root);
  if (!top.valid()) {
    os << "  root [label=\"" << escape(root.describe()) << "\\n(no graph: does not require grad)\"];\n}\n";
    return os.str();
  }
  os << "  out [shape=box, style=filled, fillcolor=lightblue, label=\"output " << escape(root.describe())
     << "\"];\n";
  walk(top.fn, [&](Node* n, size_t id) {
    std::string name = "n";  // NOTE: not "n" + to_string(id): a g++ 12 -Wrestrict false positive
    name += std::to_string(id);
    names[n] = name;
    if (auto* acc = dynamic_cast<AccumulateGrad*>(n)) {
      const TensorImpl& leaf = *acc->leaf();
      os << "  " << name << " [shape=ellipse, style=filled, fillcolor=lightgreen, label=\"leaf "
         << shape_str(leaf.sizes) << " " << to_string(leaf.dtype) << "\\nrequires_grad\"];\n";
    } else {
      os << "  " << name << " [shape=box, label=\"" << escape(n->name()) << "\\n" << escape(n->site.str()) << "\"];\n";
    }
  });
  os << "  " << names[top.fn.get()] << " -> out;\n";
  walk(top.fn, [&](Node* n, size_t) {
    for (size_t i = 0; i < n->next_edges().size(); ++i) {
      const Edge& e = n->next_edges()[i];
      const TensorMeta& m = n->input_meta()[i];
      if (e.valid())
        os << "  " << names[e.fn.get()] << " -> " << names[n] << " [label=\"" << shape_str(m.shape) << "\"];\n";
    }
  });
  os << "}\n";
  return os.str();
}

std::string graph_summary(const Tensor& root) {
  std::ostringstream os;
  Edge top = gradient_edge(root);
  if (!top.valid()) return "(no graph)\n";
  walk(top.fn, [&](Node* n, size_t) {
    os << n->name();
    std::string sep = " <- ";
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      os << sep << e.fn->name();
      if (auto* acc = dynamic_cast<AccumulateGrad*>(e.fn.get())) os << shape_str(acc->leaf()->sizes);
      sep = ", ";
    }
    os << "\n";
  });
  return os.str();
}

size_t count_nodes(const Tensor& root) {
  size_t n = 0;
  Edge top = gradient_edge(root);
  walk(top.fn, [&](Node*, size_t) { ++n; });
  return n;
}

}  // namespace gradlab::autograd
