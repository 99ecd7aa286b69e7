// A fixture for tools/check_lesson_bugs.py: one planted bug breaks its claim, the other breaks
// nothing, so the checker must fail on this program (ctest lesson_bugs_checker_catches_a_dud).
#include "common/lesson.hpp"

int main(int argc, char** argv) {
  lesson::Lesson L("00", "bugs fixture", argc, argv,
                   {{"off_by_one", "2 + 2 computed as 2 + 3", "2 + 2 == 4"},
                    {"dud", "claims to break the sum but changes nothing", "2 * 2 == 4"}});
  return L.run([&] {
    const int sum = L.bug("off_by_one") ? 2 + 3 : 2 + 2;
    L.check(sum == 4, "2 + 2 == 4");
    L.bug("dud");  // plants nothing: the checker must report it as missed
    L.check(2 * 2 == 4, "2 * 2 == 4");
  });
}
