// schedulers/process.h — running the schedulers' own commands (scontrol, sacct, sacctmgr,
// kubectl) without a shell, with a deadline.
//
// A command is an argv, started with posix_spawnp (PATH is searched, nothing is parsed by
// a shell: a job id or a pod name from the command line stays one argument). Its stdin is
// /dev/null; stdout and stderr are read through pipes, each kept up to a bound. When the
// deadline passes the command is sent SIGTERM, then SIGKILL a second later, and reaped:
// no call leaves a child behind. Not thread-safe with respect to SIGCHLD handlers that
// reap every child (firstfault installs none).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ff::app {

struct CommandResult {
  bool started = false;    // false: could not be started (`error` says why: not found, ...)
  bool timed_out = false;  // the deadline passed; the command was killed
  int exit_code = -1;      // its exit status when it exited, else -1
  int signal = 0;          // the signal that ended it, else 0
  std::string out, err;    // what it printed (each cut at max_output bytes)
  bool out_cut = false;
  std::string error;  // why it did not start, or did not finish
  bool ok() const { return started && !timed_out && exit_code == 0; }
  // "scontrol: exit 1: slurm_load_jobs error: Invalid job id specified" and the like.
  std::string describe(const std::string& name) const;
};

struct CommandOptions {
  std::chrono::milliseconds timeout{30000};
  size_t max_output = 64u << 20;  // bytes kept per stream
};

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// A command whose stdout is read as it comes (kubectl logs of a long run): the read end
// of its stdout in `fd` (the caller reads and closes it), stderr to a pipe kept up to
// 64 KiB by finish_streaming. False when it could not start (error says why).
struct StreamingCommand {
  pid_t pid = -1;
  int fd = -1;
  int err_fd = -1;
  std::string error;
};
bool start_streaming(const std::vector<std::string>& argv, StreamingCommand& cmd);
// Waits for it (killing it after `grace` once its stdout is closed by the reader) and
// returns its status and stderr.
CommandResult finish_streaming(StreamingCommand& cmd,
                               std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

}  // namespace ff::app
