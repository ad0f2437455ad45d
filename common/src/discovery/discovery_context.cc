// Discovery's per-call context: builds the shared indexes once per call, and the lexical path
// rules (link resolution, numeric directory entries) every discovery step uses.
#include "discovery/discovery_context.h"

#include <algorithm>
#include <filesystem>

#include "discovery/discovery_char_devices.h"
#include "discovery/discovery_netdevs.h"
#include "rdmak8s/base/numbers.h"
#include "device/sysfs.h"

namespace rdmak8s::internal::discovery {

namespace fs = std::filesystem;
using internal::SysfsDir;

// Numeric entry names ("0".."15", "1","2") sorted by value; others dropped.
std::vector<uint32_t> NumericEntries(const std::vector<std::string>& names) {
  std::vector<uint32_t> out;
  out.reserve(names.size());
  for (const std::string& n : names) {
    if (StatusOr<uint32_t> v = ParseUnsigned<uint32_t>(n, n); v.ok()) out.push_back(*v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The path `link` (read from a symlink inside `dir`) points at, lexically: sysfs links are
// relative and the fixture trees live under a root, so no realpath(3) is needed (or wanted: it
// would cost a lookup per component). lexically_normal leaves a trailing '/' when the link ends
// in ".." ("a/b/.." -> "a/"): it is cut, or the directory's name would read as empty and its
// parent as itself (a PF taken for an auxiliary device of its own address).
std::string ResolveLink(const std::string& dir, const std::string& link) {
  fs::path target = !link.empty() && link.front() == '/' ? fs::path(link) : fs::path(dir) / link;
  std::string out = target.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

StatusOr<Context> BuildContext(const std::string& root, std::string only_under) {
  Context ctx;
  ctx.root = root;
  ctx.only_under = std::move(only_under);
  RDMAK8S_RETURN_IF_ERROR(IndexCharClass(ctx, "infiniband_verbs"));
  RDMAK8S_RETURN_IF_ERROR(IndexCharClass(ctx, "infiniband_mad"));
  IndexRdmaCm(ctx);
  RDMAK8S_RETURN_IF_ERROR(IndexNetdevs(ctx));
  return ctx;
}

// "/sys/" and "./sys" name the same tree as "/sys": normalise once so links resolved lexically
// compare equal.
std::string NormalRoot(const std::string& root) {
  std::string r = fs::path(root.empty() ? "." : root).lexically_normal().string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r;
}

void AddUnique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace rdmak8s::internal::discovery
