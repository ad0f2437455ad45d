// Fuzz target: the CNI state store's records as it reads them back from disk (cni/state.h):
// AttachmentRecord::FromJson, and StateStore::Load / List / LoadQosOriginals over a real state dir
// whose record file and knobs.json hold the input (a file a crash half-wrote, an older release
// wrote, or someone edited). Input: the file's bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a record that parses, written back (ToJson) and parsed again, is the same record;
//   - Load of a record file gives that record when it is one of this attachment, and otherwise
//     kNotFound with the file moved into quarantine/ (never an error, never a silent drop);
//     List agrees with Load;
//   - knobs.json that loads, saved (SaveQosOriginals) and loaded again, is the same map; one that can't
//     be ours is quarantined and reads as empty.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cni/state.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace rdmak8s;
using namespace rdmak8s::cni;
namespace fs = std::filesystem;

constexpr const char* kNetwork = "rdma-net";
constexpr const char* kContainer = "c0ffee";
constexpr const char* kIfname = "net1";

// One state dir for the process (tmpfs when there is one: this target writes files per input).
const std::string& StateDir() {
  // Never destroyed: the atexit cleanup below runs after static destructors would have.
  static const std::string& dir = *new std::string([] {
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string tmpl = base + "/rdmak8s-fuzz-state-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp " + tmpl);
    std::atexit([] { std::error_code ec; fs::remove_all(StateDir(), ec); });
    return tmpl;
  }());
  return dir;
}

void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  FUZZ_CHECK(out.good(), "write " + path);
}

size_t QuarantinedCount(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir + "/quarantine", ec)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir + "/quarantine"),
                                           fs::directory_iterator()));
}

void Reset(const std::string& dir) {
  for (const char* sub : {"attachments", "quarantine", "knobs.json"}) {
    std::error_code ec;
    fs::remove_all(dir + "/" + sub, ec);
  }
}

void CheckRecordJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return;
  auto rec = AttachmentRecord::FromJson(j);
  if (!rec.ok()) {
    FUZZ_CHECK(rec.status().code() == StatusCode::kInvalidArgument, rec.status().ToString());
    return;
  }
  auto again = AttachmentRecord::FromJson(rec->ToJson());
  FUZZ_CHECK(again.ok() && again->ToJson() == rec->ToJson(), rec->ToJson().dump());
}

void CheckRecordFile(std::string_view text) {
  const std::string& dir = StateDir();
  Reset(dir);
  StateStore store(dir, [](const std::string&) {});
  // The directories as Save makes them (0700, ours), then the input as the record file.
  AttachmentRecord placeholder;
  placeholder.network = kNetwork;
  placeholder.container_id = kContainer;
  placeholder.ifname = kIfname;
  FUZZ_CHECK(store.Save(placeholder).ok(), "save placeholder");
  const std::string file = dir + "/attachments/" + kNetwork + "/" + kContainer + ":" + kIfname + ".json";
  WriteFile(file, text);

  auto loaded = store.Load(kNetwork, kContainer, kIfname);
  if (loaded.ok()) {
    FUZZ_CHECK(loaded->network == kNetwork && loaded->container_id == kContainer &&
                   loaded->ifname == kIfname,
               "Load gave another attachment's record: " + loaded->Key());
    auto direct = AttachmentRecord::FromJson(nlohmann::json::parse(text, nullptr, false));
    FUZZ_CHECK(direct.ok() && direct->ToJson() == loaded->ToJson(), loaded->ToJson().dump());
    auto listed = store.List();
    FUZZ_CHECK(listed.ok() && listed->size() == 1 && listed->front().ToJson() == loaded->ToJson(),
               "List disagrees with Load");
  } else {
    FUZZ_CHECK(loaded.status().code() == StatusCode::kNotFound, loaded.status().ToString());
    FUZZ_CHECK(!fs::exists(fs::symlink_status(file)) && QuarantinedCount(dir) == 1,
               "refused record not quarantined: " + loaded.status().ToString());
    auto listed = store.List();
    FUZZ_CHECK(listed.ok() && listed->empty(), "List shows a quarantined record");
  }
}

void CheckQosOriginalsFile(std::string_view text) {
  const std::string& dir = StateDir();
  Reset(dir);
  StateStore store(dir, [](const std::string&) {});
  WriteFile(dir + "/knobs.json", text);
  auto knobs = store.LoadQosOriginals();
  FUZZ_CHECK(knobs.ok(), knobs.status().ToString());
  if (QuarantinedCount(dir) == 1) {
    FUZZ_CHECK(knobs->empty(), "a quarantined knobs.json still gave knobs");
    return;
  }
  FUZZ_CHECK(QuarantinedCount(dir) == 0, "more than one file quarantined");
  FUZZ_CHECK(store.SaveQosOriginals(*knobs).ok(), "save knobs");
  auto again = store.LoadQosOriginals();
  FUZZ_CHECK(again.ok() && again->size() == knobs->size(), "knobs changed in a round trip");
  for (const auto& [id, k] : *knobs) {
    auto it = again->find(id);
    FUZZ_CHECK(it != again->end() && it->second.original == k.original &&
                   it->second.applied == k.applied && it->second.left_as == k.left_as,
               "knob " + id + " changed in a round trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = rdmak8s::fuzz::AsText(data, size);
  CheckRecordJson(text);
  CheckRecordFile(text);
  CheckQosOriginalsFile(text);
  return 0;
}
