#pragma once
// Readable C++ type names, for node names ("MyFuncBackward"), module names ("Linear") and the
// Jupyter kernel's exception names. The compiler's demangler stays in demangle.cpp.

#include <string>

namespace gradlab {

/// The readable name of a type from typeid(T).name() ("gradlab::nn::LinearImpl"); the argument
/// itself when it does not demangle.
std::string demangle(const char* mangled);

/// demangle's last component outside template arguments: "gradlab::nn::LinearImpl" ->
/// "LinearImpl", "(anonymous namespace)::Net<a::B>" -> "Net<a::B>".
std::string unqualified_type_name(const char* mangled);

}  // namespace gradlab
