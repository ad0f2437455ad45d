// How the binaries (rdmak8s-device-plugin, rdmak8s-dra-driver, rdmak8s-inspect) read their
// command lines: CLI11, with the two forms CLI11 2.1 reads wrongly made right, and
// `--print-flags`, so that every flag's documented default and empty form is checked against the
// parser itself (tests/integration/command_line_test.cc).
//
// Header-only: only the binaries' mains (and that test) link CLI11.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace rdmak8s {

namespace internal {

// "--name=" (a long flag, an '=' and nothing after it) split into "--name" and "": CLI11 2.1
// takes "--name=" for a flag with its value missing ("1 required TEXT missing"), while
// "--name ''" is the flag with an empty value.
inline std::vector<std::string> SplitEmptyValues(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i > 0 && arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.back() == '=' &&
        arg.find('=') == arg.size() - 1) {
      out.push_back(arg.substr(0, arg.size() - 1));
      out.emplace_back();
    } else {
      out.push_back(arg);
    }
  }
  return out;
}

// Whether `o` takes a number (CLI11's type name: INT, UINT, FLOAT, ...; TEXT for strings).
inline bool TakesANumber(const CLI::Option* o) {
  return o->get_type_size_max() > 0 && o->get_type_name().rfind("TEXT", 0) != 0;
}

// Every option of `app` and its subcommands that takes a number refuses an empty value, naming
// the flag, before any other check of it: CLI11 reads "" as 0 (`--port-poll-interval ''` would
// turn the poll off unsaid), and a range check says only "Value  not in range".
inline void RefuseEmptyNumbers(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<CLI::App*> apps = {&app};
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) apps.push_back(sub);
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (!args[i + 1].empty() || args[i].rfind("--", 0) != 0) continue;
    for (CLI::App* a : apps) {
      for (const CLI::Option* o : a->get_options()) {
        if (TakesANumber(o) && o->check_lname(args[i].substr(2))) {
          throw CLI::ValidationError(args[i], "an empty value: a number is needed");
        }
      }
    }
  }
}

}  // namespace internal

// Parses argv into `app`'s options as CLI11_PARSE does, where "--flag=" is the flag with an empty
// value (how a flag whose empty value means "off" is turned off: `--metrics-address=`) and an
// empty number is refused naming the flag. `--print-flags` prints every flag's value after the
// parse (CLI11's TOML config format, defaults included) and exits: what the binary would run
// with. Returns the exit code when the binary is to exit now (help, version, a parse error,
// --print-flags), nullopt when it is to run.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv) {
  bool print_flags = false;
  app.add_flag("--print-flags", print_flags,
               "print every flag's value as parsed (TOML, defaults included) and exit");
  const std::vector<std::string> args = internal::SplitEmptyValues(argc, argv);
  std::vector<const char*> ptrs;
  ptrs.reserve(args.size());
  for (const std::string& a : args) ptrs.push_back(a.c_str());
  try {
    internal::RefuseEmptyNumbers(app, args);
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (print_flags) {
    std::cout << app.config_to_str(true, false);
    return 0;
  }
  return std::nullopt;
}

}  // namespace rdmak8s
