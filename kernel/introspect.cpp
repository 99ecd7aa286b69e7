// complete_request and inspect_request for xgradlab; see introspect.hpp.

#include "introspect.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/RawCommentList.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Sema/CodeCompleteConsumer.h>
#include <clang/Sema/SemaCodeCompletion.h>
#include <clang/Interpreter/Interpreter.h>
#include <clang/Sema/Lookup.h>
#include <clang/Sema/Sema.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

namespace xgradlab {

std::size_t byte_offset(const std::string& text, long code_points) {
  std::size_t at = 0;
  for (long k = 0; k < code_points && at < text.size(); ++k) {
    ++at;  // past the lead byte, then past its continuation bytes (10xxxxxx)
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

long code_points(const std::string& text, std::size_t bytes) {
  long n = 0;
  for (std::size_t i = 0; i < bytes && i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++n;
  return n;
}

namespace {
bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

namespace {

// Collects what Sema proposes at the completion point: declarations' names (members after
// `x.` / `x->`, a namespace's names after `ns::`, everything visible otherwise) and keywords,
// those that start with the identifier typed so far.
class Collector : public clang::CodeCompleteConsumer {
 public:
  Collector() : clang::CodeCompleteConsumer(options()), alloc_(std::make_shared<clang::GlobalCodeCompletionAllocator>()), info_(alloc_) {}
  void ProcessCodeCompleteResults(clang::Sema& sema, clang::CodeCompletionContext,
                                  clang::CodeCompletionResult* results, unsigned n) override {
    prefix = sema.getPreprocessor().getCodeCompletionFilter().str();
    for (unsigned k = 0; k < n; ++k) {
      const clang::CodeCompletionResult& r = results[k];
      std::string name;
      if (r.Kind == clang::CodeCompletionResult::RK_Declaration && r.Declaration != nullptr &&
          r.Declaration->getDeclName().isIdentifier()) {
        name = r.Declaration->getName().str();
      } else if (r.Kind == clang::CodeCompletionResult::RK_Keyword) {
        name = r.Keyword;
      }
      if (!name.empty() && name.rfind(prefix, 0) == 0 && name.rfind("__", 0) != 0) names.insert(name);
    }
  }
  clang::CodeCompletionAllocator& getAllocator() override { return *alloc_; }
  clang::CodeCompletionTUInfo& getCodeCompletionTUInfo() override { return info_; }

  std::string prefix;
  std::set<std::string> names;

 private:
  static clang::CodeCompleteOptions options() {
    clang::CodeCompleteOptions o;
    o.IncludeGlobals = true;
    o.IncludeMacros = false;
    o.IncludeCodePatterns = false;
    o.IncludeBriefComments = false;
    return o;
  }
  std::shared_ptr<clang::GlobalCodeCompletionAllocator> alloc_;
  clang::CodeCompletionTUInfo info_;
};

}  // namespace

// NOTE: clang 19's own REPL completer (clang::ReplCodeCompleter) imports only the top-level
// names of the running interpreter into a fresh one: no namespace members (gradlab::ze<Tab>),
// no data members, nothing of the PCH. So the completion runs in the kernel's own Interpreter
// (in the fork()ed copy, which is thrown away): the cell's text becomes a virtual file, the
// preprocessor's completion point is set in it, and parsing `#include` of it makes the parser
// call Sema's code completion at the cursor with everything the kernel knows.
Completion complete(clang::Interpreter& main, const std::string& code, std::size_t cursor) {
  Completion out;
  cursor = std::min(cursor, code.size());
  clang::CompilerInstance* ci = main.getCompilerInstance();
  clang::FileManager& fm = ci->getFileManager();
  clang::SourceManager& sm = ci->getSourceManager();
  clang::Preprocessor& pp = ci->getPreprocessor();
  const std::string file = "/xgradlab/completion_input.cpp";
  const std::string content = code + "\n";
  clang::FileEntryRef fe = fm.getVirtualFileRef(file, static_cast<off_t>(content.size()), 0);
  sm.overrideFileContents(fe, llvm::MemoryBuffer::getMemBufferCopy(content, file));
  // clang's line and column of the cursor, 1-based; the column counts bytes.
  const std::string before = code.substr(0, cursor);
  const std::size_t nl = before.rfind('\n');
  const unsigned line = static_cast<unsigned>(std::count(before.begin(), before.end(), '\n') + 1);
  const unsigned col = static_cast<unsigned>(cursor - (nl == std::string::npos ? 0 : nl + 1) + 1);
  if (pp.SetCodeCompletionPoint(fe, line, col)) return out;
  Collector collector;
  ci->getSema().CodeCompletion().CodeCompleter = &collector;
  auto ptu = main.Parse("#include \"" + file + "\"\n");
  if (!ptu) llvm::consumeError(ptu.takeError());
  out.matches.assign(collector.names.begin(), collector.names.end());
  out.prefix_bytes = collector.prefix.size();
  return out;
}

namespace {

// A scope names resolve in: a namespace or a complete class.
clang::DeclContext* as_scope(clang::NamedDecl* d) {
  if (auto* alias = llvm::dyn_cast<clang::NamespaceAliasDecl>(d)) return alias->getNamespace();
  if (auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(d)) return ns;
  clang::QualType type;
  if (auto* td = llvm::dyn_cast<clang::TypedefNameDecl>(d)) type = td->getUnderlyingType();
  if (auto* rd = llvm::dyn_cast<clang::CXXRecordDecl>(d)) return rd->getDefinition();
  if (auto* ctd = llvm::dyn_cast<clang::ClassTemplateDecl>(d))
    return ctd->getTemplatedDecl()->getDefinition();
  if (!type.isNull()) {
    if (auto* rd = type->getAsCXXRecordDecl()) return rd->getDefinition();
  }
  return nullptr;
}

std::vector<clang::NamedDecl*> lookup(clang::Sema& sema, clang::DeclContext* dc, const std::string& name) {
  std::vector<clang::NamedDecl*> found;
  if (dc == nullptr || name.empty()) return found;
  clang::ASTContext& ctx = sema.getASTContext();
  clang::LookupResult r(sema, clang::DeclarationName(&ctx.Idents.get(name)), clang::SourceLocation(),
                        clang::Sema::LookupOrdinaryName);
  r.suppressDiagnostics();
  sema.LookupQualifiedName(r, dc);
  for (clang::NamedDecl* d : r) found.push_back(d);
  if (found.empty()) {
    clang::LookupResult t(sema, clang::DeclarationName(&ctx.Idents.get(name)), clang::SourceLocation(),
                          clang::Sema::LookupNestedNameSpecifierName);
    t.suppressDiagnostics();
    sema.LookupQualifiedName(t, dc);
    for (clang::NamedDecl* d : t) found.push_back(d);
  }
  return found;
}

// The class a variable's value is (through references, pointers and a class's operator->, as
// ModuleHolder's `model->forward`).
clang::DeclContext* class_of_variable(clang::NamedDecl* d, bool arrow) {
  auto* v = llvm::dyn_cast<clang::ValueDecl>(d);
  if (v == nullptr) return nullptr;
  clang::QualType t = v->getType().getNonReferenceType();
  if (arrow) {
    if (t->isPointerType()) {
      t = t->getPointeeType();
    } else if (auto* rd = t->getAsCXXRecordDecl(); rd != nullptr && rd->hasDefinition()) {
      for (clang::CXXMethodDecl* m : rd->getDefinition()->methods()) {
        if (m->getOverloadedOperator() == clang::OO_Arrow) {
          t = m->getReturnType()->getPointeeType();
          break;
        }
      }
    }
  }
  if (t.isNull()) return nullptr;
  if (auto* rd = t->getAsCXXRecordDecl()) return rd->getDefinition();
  return nullptr;
}

}  // namespace

Inspection inspect(clang::Interpreter& main, const std::string& code, std::size_t cursor) {
  Inspection out;
  cursor = std::min(cursor, code.size());
  // Shift-Tab after "f(": step back over the bracket and spaces to the name before it.
  std::size_t end = cursor;
  while (end > 0 && (code[end - 1] == '(' || code[end - 1] == ' ')) --end;
  while (end < code.size() && ident_char(code[end])) ++end;
  std::size_t begin = end;
  while (begin > 0 && (ident_char(code[begin - 1]) || code[begin - 1] == ':')) --begin;
  std::string name = code.substr(begin, end - begin);
  // `obj.member` / `obj->member`: the object is an identifier just before the operator.
  std::string object;
  bool arrow = false;
  if (begin >= 1 && code[begin - 1] == '.') {
    std::size_t ob = begin - 1;
    while (ob > 0 && ident_char(code[ob - 1])) --ob;
    object = code.substr(ob, begin - 1 - ob);
  } else if (begin >= 2 && code[begin - 1] == '>' && code[begin - 2] == '-') {
    std::size_t ob = begin - 2;
    while (ob > 0 && ident_char(code[ob - 1])) --ob;
    object = code.substr(ob, begin - 2 - ob);
    arrow = true;
  }
  if (name.empty() || !(ident_char(name.back()))) return out;
  out.name = object.empty() ? name : object + (arrow ? "->" : ".") + name;

  clang::CompilerInstance* ci = main.getCompilerInstance();
  clang::Sema& sema = ci->getSema();
  clang::ASTContext& ctx = ci->getASTContext();
  clang::DeclContext* tu = ctx.getTranslationUnitDecl();
  // Split a::b::c; a leading "::" starts at the translation unit.
  std::vector<std::string> parts;
  for (std::size_t at = 0; at <= name.size();) {
    const std::size_t sep = name.find("::", at);
    parts.push_back(name.substr(at, sep == std::string::npos ? std::string::npos : sep - at));
    if (sep == std::string::npos) break;
    at = sep + 2;
  }
  std::vector<clang::DeclContext*> scopes;
  if (!object.empty()) {
    for (clang::NamedDecl* d : lookup(sema, tu, object))
      if (clang::DeclContext* dc = class_of_variable(d, arrow)) scopes.push_back(dc);
  } else {
    scopes.push_back(tu);
    // Unqualified names: also gradlab's own (the name a lesson mentions without its namespace).
    for (clang::NamedDecl* d : lookup(sema, tu, "gradlab"))
      if (clang::DeclContext* dc = as_scope(d)) scopes.push_back(dc);
  }
  std::vector<clang::NamedDecl*> found;
  for (clang::DeclContext* scope : scopes) {
    clang::DeclContext* dc = parts.front().empty() ? tu : scope;
    bool ok = true;
    for (std::size_t k = parts.front().empty() ? 1 : 0; k + 1 < parts.size() && ok; ++k) {
      clang::DeclContext* next = nullptr;
      for (clang::NamedDecl* d : lookup(sema, dc, parts[k]))
        if ((next = as_scope(d)) != nullptr) break;
      ok = next != nullptr;
      dc = next;
    }
    if (ok) found = lookup(sema, dc, parts.back());
    if (!found.empty()) break;
  }
  if (found.empty()) return out;
  out.found = true;
  clang::PrintingPolicy policy = ctx.getPrintingPolicy();
  policy.TerseOutput = true;          // declarations, not bodies
  policy.PolishForDeclaration = true;
  policy.SuppressScope = false;
  const clang::SourceManager& sm = ctx.getSourceManager();
  std::ostringstream text;
  const std::size_t shown = std::min<std::size_t>(found.size(), 8);
  for (std::size_t k = 0; k < shown; ++k) {
    clang::NamedDecl* d = found[k];
    std::string decl;
    llvm::raw_string_ostream os(decl);
    d->print(os, policy);
    os.flush();
    if (k > 0) text << "\n";
    text << d->getQualifiedNameAsString() << "\n  " << decl << "\n";
    if (const clang::RawComment* rc = ctx.getRawCommentForAnyRedecl(d)) {
      std::istringstream lines(rc->getFormattedText(sm, ctx.getDiagnostics()));
      for (std::string l; std::getline(lines, l);) text << "  " << l << "\n";
    }
    const clang::PresumedLoc where = sm.getPresumedLoc(d->getLocation());
    if (where.isValid()) {
      std::string file = where.getFilename();
      const std::size_t src = file.rfind("/src/gradlab/");
      if (src != std::string::npos) file = file.substr(src + 5);
      text << "  declared at " << file << ":" << where.getLine() << "\n";
    }
  }
  if (found.size() > shown) text << "\n(" << found.size() - shown << " more overloads)\n";
  out.text = text.str();
  return out;
}

}  // namespace xgradlab
