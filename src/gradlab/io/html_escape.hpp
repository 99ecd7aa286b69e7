#pragma once
// Text for the HTML gradlab writes (the doctor's report page, a tensor's text/html display):
// & < > " ' become entities, so text holding markup shows as text, in element content and in
// attribute values alike.
//
//   io::html_escape("a < b & \"c\"")  ->  "a &lt; b &amp; &quot;c&quot;"

#include <string>
#include <string_view>

namespace gradlab::io {

inline std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace gradlab::io
