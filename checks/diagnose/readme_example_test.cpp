// The diagnose example of README.md ("Troubleshooting: diagnose"), copied verbatim into
// readme_example() below, and the lines of its output that the README shows.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <gradlab/gradlab.hpp>
#include <iostream>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

// ---- begin README example (keep identical to README.md / README.zh-CN.md) ----
namespace gl = gradlab;
namespace nn = gl::nn;
namespace diagnose = gl::diagnose;

int readme_example(std::ostream& out) {
  const auto digits = gl::data::load_digits_split();  // standardized [N, 64], labels 0..9
  gl::manual_seed(1);
  nn::Sequential model(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  gl::optim::SGD opt(model->parameters(), gl::optim::SGDOptions(0.1));

  // one check on its own: labels read 1..10 instead of 0..9
  out << diagnose::check_label_range(digits.train.targets() + 1, 10) << "\n";

  // all of them, data -> model -> training, stopping at the first stage that fails
  diagnose::DoctorOptions options;
  options.num_classes = 10;
  const diagnose::Report report = diagnose::doctor(
      model, nn::CrossEntropyLoss(), opt,
      {.inputs = digits.train.data(), .targets = digits.train.targets(),
       .holdout_inputs = digits.test.data()},
      options);
  out << report;  // text for people; report.json() for tools
  return report.has_failure() ? 1 : 0;
}
// ---- end README example ----

}  // namespace

TEST(DiagnoseReadme, ExampleRunsAndPrintsWhatTheReadmeShows) {
  std::ostringstream out;
  EXPECT_EQ(readme_example(out), 0);
  const std::string s = out.str();
  std::cout << s;
  using ::testing::HasSubstr;
  for (const char* line : {
           "[fail] data/label_range: 144 of 1437 labels are outside [0, 10), the first: label 10 at index 23; labels span [1, 10]\n"
           "       hint: the labels look shifted by one (1..10 instead of 0..9): subtract 1 where they are read\n",
           "== data: ok (7 checks, 0 failed, 0 warned)\n",
           "  [ok]   data/split_leakage: none of the 360 held-out rows appears in the 1437 training rows\n",
           "== model: ok (8 checks, 0 failed, 0 warned)\n",
           "  [ok]   model/initial_loss: loss at init 2.352, expected about 2.303 = ln 10 (a uniform guess over 10 classes): ratio 1.02\n",
           "== training: ok (4 checks, 0 failed, 0 warned)\n",
           "  [ok]   training/overfit_one_batch: loss 2.352 -> 0.2614 in 60 of 200 steps on one batch of 64, accuracy 100% (SGD, lr 0.1): memorized\n",
           "doctor: no failure\n"})
    EXPECT_THAT(s, HasSubstr(line));
}

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST(DiagnoseReadme, TheReadmesShowThisVeryCode) {
  // ctest runs from the repository root.
  const std::string me = read("checks/diagnose/readme_example_test.cpp");
  const std::string begin = "// ---- begin README example (keep identical to README.md / README.zh-CN.md) ----\n";
  const size_t a = me.find(begin), b = me.find("// ---- end README example ----");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  const std::string example = me.substr(a + begin.size(), b - a - begin.size());
  ASSERT_GT(example.size(), 500u);
  for (const char* page : {"README.md", "README.zh-CN.md"}) {
    const std::string text = read(page);
    ASSERT_FALSE(text.empty()) << page;
    EXPECT_NE(text.find("#include <gradlab/gradlab.hpp>\n#include <iostream>\n\n" + example + "```\n"), std::string::npos)
        << page << " does not show the example of checks/diagnose/readme_example_test.cpp verbatim";
  }
}

// The JSON schema table of both READMEs names exactly the fields json() writes (top level, and
// each finding's), and the schema id is the one the code writes.
TEST(DiagnoseReadme, TheJsonSchemaTableMatchesWhatJsonWrites) {
  diagnose::Report r;
  diagnose::Finding f;
  f.check = "finite";
  r.add(f);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.json());
  std::vector<std::string> top, per_finding;
  for (const auto& [k, v] : j.items()) top.push_back(k);
  for (const auto& [k, v] : j["findings"][0].items()) per_finding.push_back(k);
  EXPECT_EQ(j["schema"], "gradlab.diagnose.report/" + std::to_string(diagnose::Report::kJsonSchemaVersion));
  for (const char* page : {"README.md", "README.zh-CN.md"}) {
    const std::string text = read(page);
    const size_t at = text.find("`gradlab.diagnose.report/" + std::to_string(diagnose::Report::kJsonSchemaVersion) + "`");
    ASSERT_NE(at, std::string::npos) << page << " does not name the schema id";
    const size_t table = text.find("\n| `schema` |", at), end = text.find("\n\n", table);
    ASSERT_NE(table, std::string::npos) << page;
    const std::string rows = text.substr(table, end - table);
    std::vector<std::string> documented;
    for (size_t p = rows.find("\n| `"); p != std::string::npos; p = rows.find("\n| `", p + 1))
      documented.push_back(rows.substr(p + 4, rows.find('`', p + 4) - p - 4));
    std::vector<std::string> expect = top;
    expect.back() += "[]";  // the findings row is named "findings[]"
    EXPECT_EQ(documented, expect) << page;
    const std::string findings_row = rows.substr(rows.find("| `findings[]` |"));
    for (const std::string& k : per_finding)
      EXPECT_NE(findings_row.find("`" + k + "`"), std::string::npos) << page << ": finding field " << k;
  }
}
