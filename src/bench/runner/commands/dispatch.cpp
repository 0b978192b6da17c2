#include <c10/util/Exception.h>

#include "errors.h"
#include "runner/cli/command_line.h"
#include "runner/commands/commands.h"

namespace mtc::bench {
namespace {

int code(ExitCode c) { return static_cast<int>(c); }

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  ParseResult parsed = parse_command_line(argc, argv, out, err);
  if (!parsed.command_line) return parsed.exit_code;
  const CommandLine& cl = *parsed.command_line;
  try {
    switch (cl.command) {
      case Command::kRun:
        return run_command(cl, out, err);
      case Command::kList:
        return list_command(cl.list, out);
      case Command::kValidate:
        return validate_command(cl.validate, out, err);
      case Command::kCompare:
        return compare_command(cl.compare, out, err);
    }
  } catch (const UsageError& e) {
    err << "mtc-bench: error: " << e.what() << "\nRun with --help for more information.\n";
    return code(ExitCode::kUsage);
  } catch (const ConfigError& e) {
    // compare's inputs are reports: "config error" sent its users to look for a config.
    err << "mtc-bench: " << (cl.command == Command::kCompare ? "report error: " : "config error: ")
        << e.what() << '\n';
    return code(ExitCode::kUsage);
  } catch (const VerificationError& e) {
    err << "mtc-bench: verification failed: " << e.what() << '\n';
    return code(ExitCode::kVerification);
  } catch (const c10::Error& e) {
    // Without the C++ backtrace torch appends: the message is what a user can act on.
    err << "mtc-bench: runtime error: " << e.what_without_backtrace() << '\n';
    return code(ExitCode::kRuntime);
  } catch (const std::exception& e) {
    err << "mtc-bench: runtime error: " << e.what() << '\n';
    return code(ExitCode::kRuntime);
  }
  return code(ExitCode::kRuntime);
}

}  // namespace mtc::bench
