// The node check's results (rdmak8s-inspect check): one line per check, what it saw and, when it
// failed, what fixes it; printed for operators or as JSON; the exit code they add up to.
//
// Plain values, no I/O. A check that does not apply (iWARP needs no PFC, a driver without an ECN
// knob, no policy to judge against) is kSkip, never kPass: the reader must see it was not checked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmak8s::inspect {

enum class Outcome { kPass, kFail, kSkip };
std::string_view OutcomeName(Outcome o);   // "pass" | "fail" | "skip"
std::string_view OutcomeMark(Outcome o);   // "✔" | "✘" | "–"

struct CheckItem {
  std::string subject;  // what was checked: "mlx5_0", "mlx5_0 port 1", "node"
  std::string check;    // which check: "port state", "pfc", "memlock"
  Outcome outcome = Outcome::kSkip;
  std::string seen;     // the value seen ("4: ACTIVE", "priorities 3", "unlimited")
  std::string want;     // what the policy asks for; empty when nothing specific
  std::string fix;      // kFail: the command or setting that fixes it; else usually empty
  std::string note;     // why a check was skipped, or what the value means
};

class CheckReport {
 public:
  void Add(CheckItem item) { items_.push_back(std::move(item)); }
  const std::vector<CheckItem>& items() const { return items_; }
  bool AllPassed() const;   // no kFail (skips are fine)
  int Failures() const;

 private:
  std::vector<CheckItem> items_;
};

// {"passed": bool, "failures": n, "checks": [{subject, check, result, seen, want, fix, note}]}
// with want/fix/note null when empty.
nlohmann::json ReportToJson(const CheckReport& report);
// One line per check: "✘ mlx5_0 port 1  pfc  seen: ...  want: ...", the fix indented below it,
// then a summary line.
std::string FormatReport(const CheckReport& report);

// Exit codes of rdmak8s-inspect check.
inline constexpr int kCheckPassed = 0;
inline constexpr int kCheckFailed = 1;
inline constexpr int kCheckUsage = 2;   // bad flags, unreadable or invalid --config / --qos

}  // namespace rdmak8s::inspect
