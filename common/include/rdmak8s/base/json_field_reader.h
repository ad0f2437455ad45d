// Reading many fields of one document where the first error wins: json_reader.h's checked reads,
// each failure kept (the first only) while the later reads still run and report nothing. For a
// parser that fills a struct field by field and answers with one error (the CNI's netconf, the
// QoS policy): "<path>.<key>: <what>", json_reader.h's one message style.
//
// Pure code. Thread safety: one reader per parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/status.h"

namespace rdmak8s::json_reader {

class FieldReader {
 public:
  // `path`: where the object read sits in the document ("$", "$.qos"): the fields' paths start
  // there unless a read names another `where`.
  explicit FieldReader(std::string_view path = "$") : path_(path) {}

  bool ok() const { return !error_; }
  // The first failure's message (nullopt while none).
  const std::optional<std::string>& error() const { return error_; }

  // Keeps `msg` unless a failure came first.
  void Fail(std::string msg);
  void Fail(const Status& s) { Fail(std::string(s.message())); }

  // j[key] of the object at `where` (the reader's path when empty). Absent or null: "", nullopt,
  // `dflt`; a wrong type (and an Int outside lo..hi, "must be an integer in lo..hi, not v")
  // fails, and reads as absent.
  std::string String(const nlohmann::json& j, const char* key, std::string_view where = {});
  std::optional<long> Int(const nlohmann::json& j, const char* key, long lo, long hi,
                          std::string_view where = {});
  bool Bool(const nlohmann::json& j, const char* key, bool dflt, std::string_view where = {});

 private:
  std::string_view At(std::string_view where) const { return where.empty() ? path_ : where; }

  std::string path_;
  std::optional<std::string> error_;
};

}  // namespace rdmak8s::json_reader
