#pragma once
// Cling-style wrapping of a notebook cell before clang 19's Interpreter sees it (pure token logic,
// no clang needed, so it is unit-tested on its own).
//
// WHY: clang 19's incremental Interpreter crashes (the process dies) on a lambda that appears at
// namespace scope in a capturing form (`auto f = [&](...) {...};`) or inside a top-level statement
// (`std::sort(v.begin(), v.end(), [](int a, int b) {...});`), while any lambda inside a function
// body works. cling does the same as this file: it puts statements into a wrapper function and
// keeps declarations at namespace scope (cling moves them out of its wrapper on the AST, in its
// DeclExtractor; here the split is done on tokens, before parsing).
//
// The cell is cut into top-level chunks and each chunk is classified:
//   - declarations stay at namespace scope as written: #include and other preprocessor lines,
//     struct / class / union / enum, namespace, template, using, typedef, function definitions,
//     and `NAME(...);` with an all-capitals NAME (a declaring macro: GRADLAB_MODULE(Net));
//   - a variable definition stays at namespace scope too, so later cells see it; when its
//     initializer contains a lambda it is computed by a generated function,
//       auto f = <init>;  ->  inline auto __gl_init_C_K() { return <init>; } auto f = __gl_init_C_K();
//   - every maximal run of other statements becomes a generated function that runs in place,
//       <stmts>  ->  void __gl_cell_C_K() { <stmts> } int __gl_run_C_K = (__gl_cell_C_K(), 0);
//     (a global's dynamic initializer: it runs in order with the variables around it. NOTE: not
//     a top-level statement `__gl_cell_C_K();`, and not a `static` variable: clang 19 runs both
//     out of order with the cell's other globals' initializers; an external one keeps the order).
// Lines keep their numbers (the generated text is added on the lines of the chunk), so clang's
// diagnostics still point at the user's line.
//
// Captures: a top-level variable is a global, and clang rejects a global in an explicit capture
// ("cannot be captured because it does not have automatic storage duration"). So `[x]` becomes
// `[x = x]` and `[&x]` becomes `[&x = x]` (init-captures: the same copy / reference semantics).
// NOTE: `[=]` and `[&]` default captures do not capture globals: they are referenced directly, so
// a `[=]` lambda sees later changes of a top-level variable (cling behaves the same; a compiled
// program, whose variables are locals of main, captures a copy).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace xgradlab {

/// What a top-level chunk of a cell is.
enum class ChunkKind {
  Preprocessor,  ///< #include, #define, ... (namespace scope)
  Declaration,   ///< struct, namespace, template, using, function definition (namespace scope)
  Variable,      ///< a variable definition without a lambda in it (namespace scope, as written)
  LambdaVariable,///< a variable definition whose initializer holds a lambda (init function)
  Statement,     ///< anything else (into a wrapper function)
};

struct Chunk {
  ChunkKind kind;
  std::size_t begin, end;  ///< offsets into the cell
};

/// The cell's top-level chunks, in order (whitespace and comments between them are not part of
/// any chunk).
std::vector<Chunk> split_cell(std::string_view code);

/// Where the cell's trailing expression starts, or npos: the last chunk when it is a statement
/// without its `;` that is an expression (not for / if / while / do / switch / try / a block).
/// Unlike the bracket scanner (cell_scan.hpp), it sees `Point{3.0, 4.0}` and
/// `[](int a) { return 2 * a; }(21)` as one expression each.
std::size_t trailing_expression_begin(std::string_view code);

/// Rewrites `[x]` / `[&x]` captures of lambdas into init-captures (see the header comment).
std::string rewrite_captures(std::string_view code);

/// The cell as the Interpreter gets it. `cell_id` makes the generated names unique; use a new
/// number for each call.
std::string rewrite_cell(std::string_view code, unsigned cell_id);

}  // namespace xgradlab
