#include "cell_rewrite.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace xgradlab {

namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

struct Token {
  enum Kind { Ident, Number, Literal, Punct, Preproc } kind;
  std::size_t begin, end;
};

// Tokens of `code`; comments and whitespace are dropped. Literals (raw strings included) and
// preprocessor lines are single tokens. An unterminated literal or comment ends the list.
std::vector<Token> lex(std::string_view code) {
  std::vector<Token> out;
  const std::size_t n = code.size();
  bool line_start = true;
  for (std::size_t i = 0; i < n;) {
    const char c = code[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {
      const std::size_t b = i;
      while (i < n && code[i] != '\n') {
        if (code[i] == '\\' && i + 1 < n && code[i + 1] == '\n') ++i;
        ++i;
      }
      out.push_back({Token::Preproc, b, i});
      continue;
    }
    line_start = false;
    if (code.compare(i, 2, "//") == 0) {
      while (i < n && code[i] != '\n') ++i;
      continue;
    }
    if (code.compare(i, 2, "/*") == 0) {
      const std::size_t e = code.find("*/", i + 2);
      if (e == std::string_view::npos) return out;
      i = e + 2;
      continue;
    }
    if (is_ident_char(c) && std::isdigit(static_cast<unsigned char>(c)) == 0) {
      const std::size_t b = i;
      while (i < n && is_ident_char(code[i])) ++i;
      // Raw string with an encoding prefix or none: R"d( ... )d", u8R"...", LR"..."
      if (i < n && code[i] == '"' && code[i - 1] == 'R' &&
          (i - b == 1 || code.substr(b, i - b) == "u8R" || code.substr(b, i - b) == "uR" ||
           code.substr(b, i - b) == "UR" || code.substr(b, i - b) == "LR")) {
        const std::size_t open = code.find('(', i + 1);
        if (open == std::string_view::npos) return out;
        std::string close(1, ')');
        close.append(code.substr(i + 1, open - i - 1)).push_back('"');
        const std::size_t e = code.find(close, open + 1);
        if (e == std::string_view::npos) return out;
        i = e + close.size();
        out.push_back({Token::Literal, b, i});
        continue;
      }
      // An encoding prefix on an ordinary literal: u8"...", L'x'
      if (i < n && (code[i] == '"' || code[i] == '\'') &&
          (code.substr(b, i - b) == "u8" || code.substr(b, i - b) == "u" ||
           code.substr(b, i - b) == "U" || code.substr(b, i - b) == "L")) {
        const char q = code[i];
        std::size_t j = i + 1;
        while (j < n && code[j] != q && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
        if (j >= n || code[j] != q) return out;
        i = j + 1;
        out.push_back({Token::Literal, b, i});
        continue;
      }
      out.push_back({Token::Ident, b, i});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(code[i + 1])) != 0)) {
      const std::size_t b = i;
      // pp-number: digits, letters, '.', digit separators, exponent signs.
      while (i < n) {
        const char d = code[i];
        if (is_ident_char(d) || d == '.') {
          ++i;
        } else if (d == '\'' && i + 1 < n && is_ident_char(code[i + 1])) {
          ++i;
        } else if ((d == '+' || d == '-') &&
                   (code[i - 1] == 'e' || code[i - 1] == 'E' || code[i - 1] == 'p' ||
                    code[i - 1] == 'P')) {
          ++i;
        } else {
          break;
        }
      }
      out.push_back({Token::Number, b, i});
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < n && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
      if (j >= n || code[j] != c) return out;
      out.push_back({Token::Literal, i, j + 1});
      i = j + 1;
      continue;
    }
    // Punctuators: the multi-character ones this file tells apart from their first character.
    static const char* const kLong[] = {"...", "<<=", ">>=", "->*", "::", "->", "==", "!=", "<=",
                                        ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
                                        "&&", "||", "<<", "++", "--", ".*"};
    std::size_t len = 1;
    for (const char* p : kLong) {
      const std::string_view s(p);
      if (code.compare(i, s.size(), s) == 0) {
        len = s.size();
        break;
      }
    }
    // NOTE: ">>" stays two tokens: it closes two template argument lists as often as it shifts.
    out.push_back({Token::Punct, i, i + len});
    i += len;
  }
  return out;
}

class Cell {
 public:
  explicit Cell(std::string_view code) : code_(code), toks_(lex(code)) {}

  std::string_view text(std::size_t t) const {
    return code_.substr(toks_[t].begin, toks_[t].end - toks_[t].begin);
  }
  bool is(std::size_t t, std::string_view s) const { return t < toks_.size() && text(t) == s; }
  bool is_any(std::size_t t, std::initializer_list<std::string_view> ss) const {
    for (std::string_view s : ss)
      if (is(t, s)) return true;
    return false;
  }
  bool ident(std::size_t t) const { return t < toks_.size() && toks_[t].kind == Token::Ident; }
  std::size_t size() const { return toks_.size(); }
  const Token& tok(std::size_t t) const { return toks_[t]; }
  std::string_view code() const { return code_; }

  // The token after the bracket that `open` opens ((, [, {), or size() when unbalanced.
  std::size_t skip_group(std::size_t open) const {
    int depth = 0;
    for (std::size_t t = open; t < toks_.size(); ++t) {
      if (is_any(t, {"(", "[", "{"})) ++depth;
      if (is_any(t, {")", "]", "}"}) && --depth == 0) return t + 1;
    }
    return toks_.size();
  }
  // After a template argument list that starts at `open` ('<'), or `open` itself when the '<'
  // does not close before a ';' or '{' (then it is a comparison).
  std::size_t skip_angles(std::size_t open, std::size_t end) const {
    int depth = 0;
    for (std::size_t t = open; t < end; ++t) {
      if (is_any(t, {"(", "["})) {
        t = skip_group(t) - 1;
        continue;
      }
      if (is_any(t, {";", "{", "}"})) return open;
      if (is(t, "<")) ++depth;
      if (is(t, ">") && --depth == 0) return t + 1;
    }
    return open;
  }

  // [b, e): a chunk's tokens. The first token of the chunk after attributes and a template head.
  std::size_t skip_attributes(std::size_t t, std::size_t e) const {
    while (t + 1 < e && is(t, "[") && is(t + 1, "[")) t = skip_group(t);
    return t;
  }
  std::size_t skip_template_heads(std::size_t t, std::size_t e) const {
    while (t < e && is(t, "template") && is(t + 1, "<")) {
      const std::size_t after = skip_angles(t + 1, e);
      if (after == t + 1) return t;
      t = skip_attributes(after, e);
      // template <...> requires C ... is C++20: not in the kernel's C++17.
    }
    return t;
  }

  // A lambda introducer at `t`: '[' not preceded by something it could subscript or declare,
  // and whose closing ']' is followed by what a lambda declarator starts with.
  bool lambda_at(std::size_t t) const {
    if (!is(t, "[") || is(t + 1, "[")) return false;
    if (t > 0) {
      const Token& p = toks_[t - 1];
      if (p.kind == Token::Number || p.kind == Token::Literal) return false;
      if (p.kind == Token::Ident && !is_any(t - 1, {"return", "co_return", "co_yield", "throw",
                                                     "case", "else", "do"}))
        return false;
      if (is_any(t - 1, {")", "]", ">"})) return false;
      if (t > 1 && is(t - 1, "[") && is(t - 2, "[")) return false;  // attribute
    }
    const std::size_t after = skip_group(t);
    return after < toks_.size() &&
           is_any(after, {"(", "{", "<", "mutable", "->", "constexpr", "noexcept"});
  }
  bool has_lambda(std::size_t b, std::size_t e) const {
    for (std::size_t t = b; t < e; ++t)
      if (lambda_at(t)) return true;
    return false;
  }

 private:
  std::string_view code_;
  std::vector<Token> toks_;
};

bool is_decl_keyword(const Cell& c, std::size_t t) {
  return c.is_any(t, {"template", "namespace", "struct", "class", "union", "enum", "using",
                      "typedef", "extern", "static_assert", "export", "friend", "concept"});
}
bool is_stmt_keyword(const Cell& c, std::size_t t) {
  return c.is_any(t, {"for", "while", "if", "do", "switch", "try", "return", "throw", "break",
                      "continue", "goto", "delete", "co_return", "co_await", "co_yield", "{",
                      ";", "case", "default", "new", "sizeof", "this", "typeid", "alignof"});
}

// A chunk that ends at its closing '}' (no ';' after it): a statement with a block, a namespace,
// extern "C" { }, or a function definition (a '(' group before its first '{', no '=' before it).
bool block_like(const Cell& c, std::size_t b, std::size_t brace) {
  const std::size_t t = c.skip_template_heads(c.skip_attributes(b, brace), brace);
  if (c.is_any(t, {"for", "while", "if", "do", "switch", "try", "{", "namespace", "extern",
                   "inline"}) &&
      !(c.is(t, "inline") && !c.is(t + 1, "namespace")) && !(c.is(t, "extern") && c.is(t + 1, "template")))
    return true;
  if (c.is_any(t, {"struct", "class", "union", "enum", "typedef", "using"})) return false;
  if (!c.ident(t) && !c.is(t, "::") && !c.is(t, "~")) return false;
  bool paren = false;
  for (std::size_t k = t; k < brace; ++k) {
    if (c.is(k, "=") && !(k > 0 && c.is(k - 1, "operator"))) return false;
    if (c.is(k, "<")) {
      const std::size_t after = c.skip_angles(k, brace);
      if (after != k) {
        k = after - 1;
        continue;
      }
    }
    if (c.is(k, "(")) {
      paren = true;
      k = c.skip_group(k) - 1;
      continue;
    }
    if (c.is(k, "[")) {
      k = c.skip_group(k) - 1;
      continue;
    }
  }
  return paren;
}

// The declarator name of a variable definition in tokens [b, e) (the chunk without its ';'), or
// e when the chunk is not one: specifiers, a type, then a name followed by = { ( ; [ ,
// (or `auto [a, b]`, a structured binding, whose '[' is returned).
std::size_t variable_name(const Cell& c, std::size_t b, std::size_t e) {
  std::size_t t = c.skip_attributes(b, e);
  bool type_seen = false;
  static const std::initializer_list<std::string_view> kSpecifiers = {
      "static", "const", "constexpr", "inline", "thread_local", "volatile", "mutable", "register"};
  static const std::initializer_list<std::string_view> kBuiltin = {
      "unsigned", "signed", "long", "short", "int", "char", "bool", "float", "double", "void",
      "wchar_t", "char8_t", "char16_t", "char32_t", "auto"};
  for (;;) {
    if (c.is_any(t, kSpecifiers)) {
      ++t;
    } else if (c.is_any(t, kBuiltin)) {
      type_seen = true;
      ++t;
    } else {
      break;
    }
  }
  if (!type_seen) {
    if (c.is(t, "decltype") && c.is(t + 1, "(")) {
      t = c.skip_group(t + 1);
    } else {
      if (c.is(t, "typename")) ++t;
      if (c.is(t, "::")) ++t;
      if (!c.ident(t) || is_decl_keyword(c, t) || is_stmt_keyword(c, t) || c.is(t, "operator"))
        return e;
      ++t;
      for (;;) {
        if (c.is(t, "<")) {
          const std::size_t after = c.skip_angles(t, e);
          if (after == t) return e;
          t = after;
        }
        if (c.is(t, "::") && c.ident(t + 1)) {
          t += 2;
          continue;
        }
        break;
      }
    }
  }
  while (c.is_any(t, {"const", "volatile"})) ++t;
  while (c.is_any(t, {"*", "&", "&&", "const", "volatile"})) ++t;
  if (c.is(t, "[")) return c.is(b, "auto") || c.is_any(t - 1, {"auto", "&", "&&"}) ? t : e;
  if (!c.ident(t) || is_stmt_keyword(c, t) || is_decl_keyword(c, t)) return e;
  if (t + 1 == e || c.is_any(t + 1, {"=", "{", "(", "[", ","})) return t;
  return e;
}

// `NAME(...);` with an all-capitals NAME: a macro that declares something, such as
// GRADLAB_MODULE(Net) (LibTorch's TORCH_MODULE). A statement macro at the cell's top level would
// have to be written inside a block: `{ CHECK(x); }`.
bool macro_declaration(const Cell& c, std::size_t t, std::size_t last) {
  if (!c.ident(t) || !c.is(t + 1, "(")) return false;
  bool letter = false;
  for (char ch : c.text(t)) {
    if (std::islower(static_cast<unsigned char>(ch)) != 0) return false;
    letter = letter || std::isupper(static_cast<unsigned char>(ch)) != 0;
  }
  const std::size_t after = c.skip_group(t + 1);
  return letter && c.text(t).size() >= 2 && (after == last || (after + 1 == last && c.is(after, ";")));
}

}  // namespace

std::vector<Chunk> split_cell(std::string_view code) {
  const Cell c(code);
  std::vector<Chunk> chunks;
  const std::size_t n = c.size();
  std::size_t b = 0;
  auto classify = [&](std::size_t first, std::size_t last /* exclusive */) {
    Chunk ch{ChunkKind::Statement, c.tok(first).begin, c.tok(last - 1).end};
    const std::size_t t = c.skip_template_heads(c.skip_attributes(first, last), last);
    if (c.tok(first).kind == Token::Preproc) {
      ch.kind = ChunkKind::Preprocessor;
    } else if (t != c.skip_attributes(first, last) || is_decl_keyword(c, t) ||
               (c.is(t, "inline") && c.is(t + 1, "namespace"))) {
      ch.kind = ChunkKind::Declaration;
    } else if (is_stmt_keyword(c, t)) {
      ch.kind = ChunkKind::Statement;
    } else if (macro_declaration(c, t, last)) {
      ch.kind = ChunkKind::Declaration;
    } else if (c.is(last - 1, "}")) {
      std::size_t brace = first;  // the chunk's first top-level '{'
      while (brace < last && !c.is(brace, "{")) {
        brace = c.is_any(brace, {"(", "["}) ? c.skip_group(brace) : brace + 1;
      }
      ch.kind = block_like(c, first, brace) ? ChunkKind::Declaration : ChunkKind::Statement;
    } else {
      const std::size_t e = c.is(last - 1, ";") ? last - 1 : last;
      if (variable_name(c, first, e) != e)
        ch.kind = c.has_lambda(first, e) ? ChunkKind::LambdaVariable : ChunkKind::Variable;
    }
    chunks.push_back(ch);
  };
  int depth = 0;
  bool needs_semicolon = false;  // the chunk is a declaration that ends in ';' after its '}'
  for (std::size_t t = 0; t < n; ++t) {
    if (t == b) {
      if (c.tok(t).kind == Token::Preproc) {
        classify(t, t + 1);
        b = t + 1;
        continue;
      }
      const std::size_t h = c.skip_template_heads(c.skip_attributes(t, n), n);
      needs_semicolon = c.is_any(h, {"struct", "class", "union", "enum", "typedef", "using",
                                     "static_assert"}) ||
                        (h < n && c.tok(h).kind != Token::Ident && !c.is_any(h, {"{", "::", "~"}));
      if (h > t) {  // attributes and template heads: their '=' and '{' are not the chunk's
        t = h - 1;
        continue;
      }
    }
    if (c.is_any(t, {"(", "[", "{"})) ++depth;
    if (c.is_any(t, {")", "]", "}"})) --depth;
    if (depth < 0) depth = 0;  // a stray closer: clang reports it
    if (depth == 0 && c.is(t, "=") && !(t > 0 && c.is(t - 1, "operator"))) needs_semicolon = true;
    if (depth != 0) continue;
    bool end = c.is(t, ";");
    if (c.is(t, "}") && !needs_semicolon) {
      // if / else, try / catch, do / while and `} x;` continue the chunk.
      end = !(c.is_any(t + 1, {"else", "catch", ";", ",", "(", ".", "->", "[", ")"}) ||
              (c.is(t + 1, "while") && c.is(b, "do")));
    }
    if (end) {
      classify(b, t + 1);
      b = t + 1;
    }
  }
  if (b < n) classify(b, n);
  return chunks;
}

std::size_t trailing_expression_begin(std::string_view code) {
  const std::vector<Chunk> chunks = split_cell(code);
  if (chunks.empty() || chunks.back().kind != ChunkKind::Statement) return std::string_view::npos;
  const Cell c(code.substr(chunks.back().begin, chunks.back().end - chunks.back().begin));
  if (c.size() == 0 || c.is(c.size() - 1, ";") || c.tok(0).kind == Token::Preproc) return std::string_view::npos;
  const std::size_t t = c.skip_attributes(0, c.size());
  if (c.is_any(t, {"for", "while", "if", "do", "switch", "try", "{", "return", "throw", "break",
                   "continue", "goto", "case", "default"}))
    return std::string_view::npos;
  return chunks.back().begin;
}

std::string rewrite_captures(std::string_view code) {
  const Cell c(code);
  std::string out;
  std::size_t copied = 0;
  for (std::size_t t = 0; t < c.size(); ++t) {
    if (!c.lambda_at(t)) continue;
    const std::size_t close = c.skip_group(t) - 1;
    // Items separated by ',' at the list's own depth.
    std::size_t item = t + 1;
    for (std::size_t k = t + 1; k <= close; ++k) {
      if (c.is_any(k, {"(", "[", "{"}) && k != t) {
        k = c.skip_group(k) - 1;
        continue;
      }
      if (!(c.is(k, ",") || k == close)) continue;
      // [item, k): `x` or `&x` (not this, not a pack `x...`, not an init-capture).
      std::size_t name = item;
      if (k - item == 2 && c.is(item, "&")) name = item + 1;
      if (k - name == 1 && c.ident(name) && !c.is(name, "this")) {
        out.append(code.substr(copied, c.tok(name).end - copied));
        out.append(" = ").append(c.text(name));
        copied = c.tok(name).end;
      }
      item = k + 1;
    }
  }
  out.append(code.substr(copied));
  return out;
}

namespace {

// The name of a preprocessor directive: "if", "ifdef", "else", "define", ...
std::string_view directive_name(std::string_view directive) {
  const std::size_t k = directive.find_first_not_of(" \t", 1);
  if (k == std::string_view::npos) return {};
  std::size_t e = k;
  while (e < directive.size() && is_ident_char(directive[e])) ++e;
  return directive.substr(k, e - k);
}

// An open conditional group (#if ... #endif) of the cell: its directives so far (the opening
// one, then #elif / #else), and whether a #define / #undef came after its opening one.
struct Group {
  std::vector<std::string_view> directives;
  bool defines = false;
};

// Where a part starts (see "Order" in cell_rewrite.hpp). A cut inside conditional groups closes
// them at the end of the part before (#endif) and opens them again at the start of the next one
// (their directives, on lines of its padding), so that the same branches are taken.
struct Cut {
  std::size_t at;                            ///< offset into the rewritten cell
  std::vector<std::string_view> directives;  ///< the open groups' directives, outermost first
  std::size_t groups;                        ///< how many groups are open
};

// The rewritten cell; `cuts` gets where a new part starts: before a chunk, when the part so far
// holds something that runs. The cell's text is `code`, which outlives the cuts.
std::string rewrite(const std::string& code, unsigned cell_id, std::vector<Cut>* cuts) {
  const std::vector<Chunk> chunks = split_cell(code);
  const std::string id = std::to_string(cell_id);
  std::string out;
  std::size_t copied = 0;  // code[0, copied) is in out
  unsigned serial = 0;
  bool part_runs = false;     // the current part holds a statement run or a variable
  std::vector<Group> groups;  // open #if groups
  bool in_run = false;
  std::string run_name;
  auto close_run = [&] {
    if (!in_run) return;
    out.append(" } int __gl_run_").append(run_name).append(" = (__gl_cell_");
    out.append(run_name).append("(), 0);");
    in_run = false;
  };
  for (const Chunk& ch : chunks) {
    if (ch.kind != ChunkKind::Statement) close_run();
    // NOTE: not inside a group whose condition a #define / #undef in it may have changed: opened
    // again, it could take another branch (#ifndef ONCE / #define ONCE / ...).
    const bool redefined =
        std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.defines; });
    if (part_runs && !in_run && !redefined) {
      Cut cut{out.size(), {}, groups.size()};
      for (const Group& g : groups)
        cut.directives.insert(cut.directives.end(), g.directives.begin(), g.directives.end());
      cuts->push_back(std::move(cut));
      part_runs = false;
    }
    // NOTE: [[gnu::used]]: a variable is emitted here, not where it is first used (see "Order" in
    // cell_rewrite.hpp). It goes right after the chunk before (before a comment there), so that a
    // variable on a line of its own keeps its columns in clang's diagnostics; not on a
    // preprocessor line, nor before the cell's first chunk.
    const bool used_before = ch.kind == ChunkKind::Variable && &ch != &chunks.front() &&
                             (&ch)[-1].kind != ChunkKind::Preprocessor;
    if (used_before) out.append("[[gnu::used]]");
    out.append(code, copied, ch.begin - copied);  // what lies between chunks (spaces, comments)
    const std::string_view text = std::string_view(code).substr(ch.begin, ch.end - ch.begin);
    part_runs = part_runs || ch.kind == ChunkKind::Statement || ch.kind == ChunkKind::Variable ||
                ch.kind == ChunkKind::LambdaVariable;
    if (ch.kind == ChunkKind::Preprocessor) {
      const std::string_view name = directive_name(text);
      if (name == "if" || name == "ifdef" || name == "ifndef") {
        groups.push_back({{text}, false});
      } else if ((name == "elif" || name == "else") && !groups.empty()) {
        groups.back().directives.push_back(text);
      } else if (name == "endif" && !groups.empty()) {
        groups.pop_back();
      } else if (name == "define" || name == "undef") {
        for (Group& g : groups) g.defines = true;
      }
    }
    switch (ch.kind) {
      case ChunkKind::Variable:
        if (!used_before) out.append("[[gnu::used]] ");
        out.append(text);
        break;
      case ChunkKind::Statement:
        if (!in_run) {
          run_name = id + "_" + std::to_string(serial++);
          out.append("void __gl_cell_").append(run_name).append("() { ");
          in_run = true;
        }
        out.append(text);
        break;
      case ChunkKind::LambdaVariable: {
        // `decl = init;` or `T name{init}` / `T name(init)`: the initializer moves into an init
        // function, and the variable is initialized by calling it.
        const Cell c(text);
        std::size_t e = c.size();
        if (c.is(e - 1, ";")) --e;
        const std::size_t name = variable_name(c, 0, e);
        std::size_t eq = c.is(name, "[") ? c.skip_group(name) : name + 1;
        bool single = c.is(eq, "=") && eq + 1 < e;
        const bool direct = c.is_any(eq, {"{", "("}) && c.skip_group(eq) == e;
        for (std::size_t k = eq + 1; single && k < e; ++k) {
          if (c.is_any(k, {"(", "[", "{"})) k = c.skip_group(k) - 1;
          else if (c.is(k, ",")) single = false;
        }
        // The declared type without storage specifiers (and, for a functional cast, `const`).
        std::string type(text.substr(0, c.tok(name).begin));
        bool plain = true;  // no static / constexpr / thread_local / inline: extern is allowed
        for (const char* sp : {"static ", "inline ", "constexpr ", "thread_local "}) {
          for (std::size_t p; (p = type.find(sp)) != std::string::npos;) {
            type.erase(p, std::string(sp).size());
            plain = false;
          }
        }
        const bool deduced = type.find("auto") != std::string::npos ||
                             type.find("decltype") != std::string::npos;
        if ((!single && !direct) || (direct && deduced)) {
          out.append(text);  // several declarators, or `auto v{...}`: left as written
          break;
        }
        bool is_constexpr = false;
        for (std::size_t k = 0; k < name; ++k) is_constexpr = is_constexpr || c.is(k, "constexpr");
        const std::string fn = "__gl_init_" + id + "_" + std::to_string(serial++);
        // A variable of a declared type is declared first, so that its lambda can refer to it
        // (`std::function<int(int)> fib = [&fib](int n) {... fib(n - 1) ...};`).
        if (!deduced && plain && !c.is(name, "[")) {
          out.append("extern ").append(text.substr(0, c.tok(name).end)).append("; ");
        }
        std::string cast = type;  // `const T` cannot start a functional cast
        while (cast.rfind("const ", 0) == 0) cast.erase(0, 6);
        const std::string ret = direct || c.is(eq + 1, "{") ? cast : "auto";
        out.append(is_constexpr ? "constexpr " : "inline ").append(ret).append(" ").append(fn);
        out.append("() { return ");
        if (direct) {
          out.append(cast).append(text.substr(c.tok(eq).begin, c.tok(e - 1).end - c.tok(eq).begin));
          out.append("; } ");
          out.append(text.substr(0, c.tok(name).end)).append(" = ").append(fn).append("();");
        } else {
          out.append(text.substr(c.tok(eq + 1).begin, c.tok(e - 1).end - c.tok(eq + 1).begin));
          out.append("; } ");
          out.append(text.substr(0, c.tok(eq).end)).append(" ").append(fn).append("();");
        }
        break;
      }
      default:
        out.append(text);
    }
    copied = ch.end;
  }
  close_run();
  out.append(code, copied, std::string::npos);
  return out;
}

}  // namespace

std::string rewrite_cell(std::string_view code, unsigned cell_id) {
  std::vector<Cut> cuts;
  return rewrite(drop_static(rewrite_captures(code)), cell_id, &cuts);
}

std::vector<std::string> rewrite_cell_parts(std::string_view code, unsigned cell_id) {
  const std::string cell = drop_static(rewrite_captures(code));
  std::vector<Cut> cuts;
  const std::string out = rewrite(cell, cell_id, &cuts);
  cuts.push_back({out.size(), {}, 0});
  std::vector<std::string> parts;
  std::size_t from = 0, line = 0, column = 0;  // line and column of out[from]
  const Cut* opened = nullptr;                 // the cut the part starts at
  for (const Cut& cut : cuts) {
    // Padding: the groups opened again (on the first lines), newlines, spaces.
    std::string part;
    if (opened != nullptr) {
      for (const std::string_view d : opened->directives) part.append(d).push_back('\n');
    }
    const auto lines = static_cast<std::size_t>(std::count(part.begin(), part.end(), '\n'));
    part.append(line > lines ? line - lines : 0, '\n').append(column, ' ');
    part.append(out, from, cut.at - from);
    for (std::size_t g = 0; g < cut.groups; ++g) part.append("\n#endif");
    parts.push_back(std::move(part));
    for (; from < cut.at; ++from) {
      if (out[from] == '\n') {
        ++line;
        column = 0;
      } else {
        ++column;
      }
    }
    opened = &cut;
  }
  return parts;
}

std::string drop_static(std::string_view code) {
  std::string out(code);
  for (const Chunk& ch : split_cell(code)) {
    if (ch.kind == ChunkKind::Preprocessor || ch.kind == ChunkKind::Statement) continue;
    const Cell c(code.substr(ch.begin, ch.end - ch.begin));
    // The leading specifiers: `static`, `static inline`, `const static`, `constexpr static`, ...
    for (std::size_t t = c.skip_template_heads(c.skip_attributes(0, c.size()), c.size());
         c.is_any(t, {"static", "inline", "const", "constexpr", "volatile", "thread_local"}); ++t) {
      if (c.is(t, "static")) out.replace(ch.begin + c.tok(t).begin, 6, 6, ' ');
    }
  }
  return out;
}

}  // namespace xgradlab
