// io::html_escape: the five characters that can end text or an attribute become entities, and
// nothing else changes (the doctor's report page and a tensor's text/html both rely on it).

#include <gtest/gtest.h>

#include <gradlab/io/html_escape.hpp>

TEST(HtmlEscape, TheFiveMarkupCharactersBecomeEntities) {
  EXPECT_EQ(gradlab::io::html_escape("a < b & \"c\" > 'd'"), "a &lt; b &amp; &quot;c&quot; &gt; &#39;d&#39;");
  EXPECT_EQ(gradlab::io::html_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
}

TEST(HtmlEscape, OtherTextIsUnchanged) {
  EXPECT_EQ(gradlab::io::html_escape(""), "");
  EXPECT_EQ(gradlab::io::html_escape("loss 2.303 \xE2\x86\x92 0.26 (100%)"), "loss 2.303 \xE2\x86\x92 0.26 (100%)");
  EXPECT_EQ(gradlab::io::html_escape("&amp;"), "&amp;amp;") << "an entity is escaped again: the input is text";
}
