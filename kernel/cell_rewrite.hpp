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
//     (a global's dynamic initializer; NOTE: not a top-level statement `__gl_cell_C_K();`: clang
//     19 runs those out of order with the cell's globals' initializers).
//
// Order: the cell runs top to bottom, like a script. One input of clang 19's Interpreter does
// NOT run its initializers in the order they are written: it gives a const-qualified variable
// (`const double y = x * 2;`, `const auto [a, b] = f();`) linkonce linkage, so that it is made
// once across inputs, and such an initializer (and an inline variable's) runs before all the
// input's other ones; `x = 3; const double y = x * 2;` read the old x. So the rewritten cell is
// cut into parts (rewrite_cell_parts), each holding at most one thing that runs (a run of
// statements, or one variable definition) after the declarations before it, and the kernel
// parses and runs the parts one after the other. Two more traps, each seen:
//   - clang emits a variable whose initializer has no side effect (`x * 2`) only where it is
//     first used: a later cell made it then, from that cell's x. Every variable definition gets
//     [[gnu::used]], which makes clang emit (and initialize) it in its own part.
//   - a `static` variable or function has internal linkage, and each later input that used it got
//     a copy of its own (a static variable initialized again, a function's static local counting
//     from 0 again). `static` on a top-level variable or function is blanked out (a notebook has
//     no other translation unit for it to hide from).
// A part cut inside conditional groups (#if ... #endif) closes them (#endif at its end), and the
// next part opens them again (their #if / #elif / #else lines, on lines of its padding), so the
// preprocessor takes the same branches; but a group after a #define or #undef in it is not cut
// (opened again, `#ifndef ONCE` / `#define ONCE` would take the other branch): there clang's own
// order applies. What is left: a function declared before statements that call it and defined
// after them in the same cell is not yet defined when those statements run (the JIT says
// "Symbols not found"); define it before the calls.
// Lines keep their numbers (the generated text is added on the lines of the chunk, a variable's
// [[gnu::used]] at the end of the line before when it can, and each part is padded to its place),
// so clang's diagnostics still point at the user's line.
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

/// The cell as the Interpreter gets it, in parts to parse and run one after the other (see
/// "Order" above). Each part is padded at its start with newlines and spaces, so that clang's
/// line and column numbers are the rewritten cell's. `cell_id` makes the generated names unique;
/// use a new number for each call.
std::vector<std::string> rewrite_cell_parts(std::string_view code, unsigned cell_id);

/// The parts of rewrite_cell_parts joined, without their padding.
std::string rewrite_cell(std::string_view code, unsigned cell_id);

/// Blanks out (with spaces, so that columns stay) the `static` of top-level variables and
/// functions (see "Order" above).
std::string drop_static(std::string_view code);

}  // namespace xgradlab
