// Fixture of checks/notebooks/notebook_sections.py: a lesson with three sections, one of them
// computed (its heading must start with the leading literal). Never built.
int main(int argc, char** argv) {
  lesson::Lesson L(1, "demo", argc, argv);
  L.section("1. a tensor");
  // L.section("a commented-out call is no section");
  L.section("2. its gradient: "
            "d(x^2)/dx = 2x");
  L.section("3. speed of [" + std::to_string(64) + "] floats");
  return L.verdict();
}
