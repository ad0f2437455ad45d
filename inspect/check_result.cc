#include "check_result.h"

#include <sstream>

namespace rdmak8s::inspect {

using nlohmann::json;

namespace {

struct OutcomeText {
  std::string_view name;
  std::string_view mark;
};

// Indexed by Outcome (kPass, kFail, kSkip).
constexpr OutcomeText kOutcomeText[] = {{"pass", "✔"}, {"fail", "✘"}, {"skip", "–"}};

}  // namespace

std::string_view OutcomeName(Outcome o) { return kOutcomeText[static_cast<int>(o)].name; }
std::string_view OutcomeMark(Outcome o) { return kOutcomeText[static_cast<int>(o)].mark; }

bool CheckReport::AllPassed() const { return Failures() == 0; }

int CheckReport::Failures() const {
  int n = 0;
  for (const CheckItem& i : items_) n += i.outcome == Outcome::kFail;
  return n;
}

json ReportToJson(const CheckReport& report) {
  auto or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json checks = json::array();
  for (const CheckItem& i : report.items()) {
    checks.push_back({{"subject", i.subject},
                      {"check", i.check},
                      {"result", std::string(OutcomeName(i.outcome))},
                      {"seen", i.seen},
                      {"want", or_null(i.want)},
                      {"fix", or_null(i.fix)},
                      {"note", or_null(i.note)}});
  }
  return {{"passed", report.AllPassed()}, {"failures", report.Failures()}, {"checks", checks}};
}

std::string FormatReport(const CheckReport& report) {
  std::ostringstream o;
  int passed = 0, skipped = 0;
  for (const CheckItem& i : report.items()) {
    passed += i.outcome == Outcome::kPass;
    skipped += i.outcome == Outcome::kSkip;
    o << OutcomeMark(i.outcome) << " " << i.subject << "  " << i.check << ": "
      << (i.seen.empty() ? "-" : i.seen);
    if (!i.want.empty()) o << "  (want " << i.want << ")";
    if (!i.note.empty()) o << "  [" << i.note << "]";
    o << "\n";
    if (!i.fix.empty()) o << "    fix: " << i.fix << "\n";
  }
  o << passed << " passed, " << report.Failures() << " failed, " << skipped << " not checked\n";
  return o.str();
}

}  // namespace rdmak8s::inspect
