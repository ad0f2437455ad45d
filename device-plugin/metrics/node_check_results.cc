#include "device-plugin/metrics/node_check_results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dp {

StatusOr<NodeCheckResults> ReadNodeCheckResults(const std::string& path) {
  // The one safe reader: the path is a file another job writes, and a FIFO there would block
  // every scrape. Links are followed (an operator may point the path at the job's output).
  int64_t mtime = 0;
  StatusOr<std::string> text =
      ReadRegularFile(path, 16 << 20, FileLinks::kFollow, [&mtime](const struct stat& st) {
        mtime = st.st_mtim.tv_sec;
        return Status::Ok();
      });
  if (!text.ok()) return text.status().Prepend("read node check results " + path);
  NodeCheckResults out;
  out.written_unix_seconds = mtime;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("node check results " + path + ": " + why);
  };
  RDMAK8S_ASSIGN_OR_RETURN(const nlohmann::json j, json_reader::Parse(*text, "node check results " + path));
  if (!j.is_object()) return bad("not a JSON object");
  auto passed = j.find("passed");
  auto checks = j.find("checks");
  if (passed == j.end() || !passed->is_boolean()) return bad("no boolean \"passed\"");
  if (checks == j.end() || !checks->is_array()) return bad("no array \"checks\"");
  out.passed = passed->get<bool>();
  for (const auto& c : *checks) {
    if (!c.is_object()) return bad("a check is not an object");
    NodeCheckItem item;
    for (auto [key, field] : {std::pair{"subject", &item.subject}, std::pair{"check", &item.check},
                              std::pair{"result", &item.result}}) {
      auto v = c.find(key);
      if (v == c.end() || !v->is_string()) return bad(std::string("a check has no string \"") + key + "\"");
      *field = v->get<std::string>();
    }
    out.items.push_back(std::move(item));
  }
  return out;
}

}  // namespace rdmak8s::dp
