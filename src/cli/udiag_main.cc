// udiag: the command-line front end of udiagd's tracefs tree. See docs/cli.md.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/daemon_dir.h"
#include "cli/bpftrace_command.h"
#include "cli/cli_support.h"
#include "cli/export_command.h"
#include "cli/hist_command.h"
#include "cli/mark_command.h"
#include "cli/mmiotrace_command.h"
#include "cli/mount_command.h"
#include "cli/record_command.h"
#include "cli/recover_command.h"
#include "cli/run_command.h"
#include "cli/trace_command.h"
#include "cli/tree_commands.h"

namespace {

namespace cli = udiag::cli;

constexpr const char* kDescription =
    "udiag - read and control user_events tracing served by udiagd.\n\n"
    "Every command talks to the udiagd of one tracing domain: the one in --dir,\n"
    "else in $UDIAG_DIR, else /run/udiag (root) or $XDG_RUNTIME_DIR/udiag.\n"
    "PATHs are those of tracefs (/sys/kernel/tracing): user_events_status,\n"
    "dynamic_events, available_events, trace, trace_pipe, tracing_on,\n"
    "events/user_events/<name>/{enable,format,id}, ...";

constexpr const char* kFooter = "Run 'udiag COMMAND --help' for what a command does. Reference: docs/cli.md.";

constexpr const char* kEventHelp =
    "EVENT is a tracepoint name ('count'), 'system:name' ('user_events:count'),\n"
    "or a glob of either ('count_*', 'user_events:*').";
constexpr const char* kFilterHelp =
    "\n-f/--filter EXPR sets the ftrace filter (docs/filters.md) of the events the -e before it\n"
    "selects, in the instance read, as trace-cmd's -f does.";

// -e EVENT (repeatable) and --filter EXPR for the -e before it: parsed in
// command-line order so that each filter pairs with its event.
void AddEventOptions(CLI::App* command, std::vector<std::string>* events, std::vector<std::string>* filters,
                     const std::string& event_help) {
  command
      ->add_option_function<std::string>(
          "-e,--event",
          [events, filters](const std::string& event) {
            events->push_back(event);
            filters->emplace_back();
          },
          event_help)
      ->trigger_on_parse()
      ->allow_extra_args(false);
  command
      ->add_option_function<std::string>(
          "-f,--filter",
          [events, filters](const std::string& filter) {
            if (events->empty()) throw CLI::ValidationError("--filter", "needs an -e EVENT before it");
            filters->back() = filter;
          },
          "Filter for the events of the preceding -e, e.g. 'status >= 500 && path ~ \"/api/*\"'")
      ->trigger_on_parse()
      ->allow_extra_args(false);
}

// What the command line asked for; the chosen command runs once all of it is
// parsed, so that --dir is known wherever it was given.
struct CommandLine {
  std::string dir_flag;
  std::string path;
  std::vector<std::string> words;  // write's TEXT, enable's and disable's EVENTs
  bool append = false;
  bool foreground = false;  // mount's --foreground
  cli::TraceOptions trace;
  cli::MmiotraceOptions mmiotrace;
  cli::RecordOptions record;
  cli::ExportOptions export_options;
  cli::BpftraceOptions bpftrace;
  cli::HistOptions hist;
  std::string format;  // record's and convert's --format
  bool json = false;   // report's --json
  std::vector<std::string> command;  // run's COMMAND
  std::function<int(const std::string& dir)> run;
};

// --dir is accepted before and after the command name, and shows in each help.
void AddDirOption(CLI::App* app, CommandLine& line) {
  app->add_option("--dir", line.dir_flag,
                  "udiagd's directory (default: $UDIAG_DIR, else /run/udiag or $XDG_RUNTIME_DIR/udiag)");
}

CLI::App* AddCommand(CLI::App& app, CommandLine& line, const std::string& name, const std::string& summary,
                     const std::string& details) {
  CLI::App* command = app.add_subcommand(name, summary);
  command->footer(details);
  AddDirOption(command, line);
  return command;
}

void AddFileCommands(CLI::App& app, CommandLine& line) {
  CLI::App* cat = AddCommand(app, line, "cat", "Print a file of the tracefs tree",
                             "Like `cat PATH` in tracefs. A trace_pipe is streamed until Ctrl-C or SIGTERM.");
  cat->add_option("PATH", line.path, "File to print, e.g. user_events_status, events/user_events/NAME/format")
      ->required();
  cat->callback([&] { line.run = [&](const std::string& dir) { return cli::Cat(dir, line.path); }; });

  CLI::App* write = AddCommand(
      app, line, "write", "Write a line to a file of the tracefs tree",
      "Like `echo TEXT > PATH` (or `>>` with --append): the words are joined by spaces and a\n"
      "newline is added. Creating an event is an append to dynamic_events:\n"
      "  udiag write --append dynamic_events 'u:test u32 count'\n"
      "Put TEXT after `--` when it starts with a dash, as a delete does: -- '-:test u32 count'.");
  write->add_flag("-a,--append", line.append, "Append (>>) instead of truncating (>): needed for dynamic_events");
  write->add_option("PATH", line.path, "File to write, e.g. dynamic_events, tracing_on")->required();
  write->add_option("TEXT", line.words, "Words to write")->required();
  write->callback([&] {
    line.run = [&](const std::string& dir) { return cli::Write(dir, line.path, line.words, line.append); };
  });

  CLI::App* ls = AddCommand(app, line, "ls", "List a directory of the tracefs tree",
                            "Prints one entry a line; directories end with '/'. DIR defaults to the root.");
  ls->add_option("DIR", line.path, "Directory to list, e.g. events/user_events");
  ls->callback([&] { line.run = [&](const std::string& dir) { return cli::List(dir, line.path); }; });

  CLI::App* status =
      AddCommand(app, line, "status", "Show the registered user events (user_events_status)",
                 "Same as `udiag cat user_events_status`: a line per event, then the Active and Busy counts.");
  status->callback([&] { line.run = [](const std::string& dir) { return cli::Cat(dir, "user_events_status"); }; });
}

void AddInstanceCommands(CLI::App& app, CommandLine& line) {
  CLI::App* mkdir = AddCommand(
      app, line, "mkdir", "Create a trace instance (instances/NAME)",
      "Like `mkdir instances/NAME` in tracefs: a new instance with its own buffer, events/*/enable,\n"
      "set_event, tracing_on, trace, trace_pipe, buffer_size_kb, options/overwrite and snapshot.\n"
      "Fails with EEXIST if it exists, EINVAL for a bad NAME. Example: udiag mkdir instances/flight");
  mkdir->add_option("PATH", line.path, "instances/NAME")->required();
  mkdir->callback([&] { line.run = [&](const std::string& dir) { return cli::MakeDirectory(dir, line.path); }; });

  CLI::App* rmdir = AddCommand(
      app, line, "rmdir", "Remove a trace instance (instances/NAME)",
      "Like `rmdir instances/NAME` in tracefs: frees its buffer and releases its enabled events.\n"
      "Fails with ENOENT if it does not exist, EBUSY while a trace_pipe or record stream reads it.");
  rmdir->add_option("PATH", line.path, "instances/NAME")->required();
  rmdir->callback([&] { line.run = [&](const std::string& dir) { return cli::RemoveDirectory(dir, line.path); }; });
}

void AddEnableCommand(CLI::App& app, CommandLine& line, bool enable) {
  std::string verb = enable ? "enable" : "disable";
  CLI::App* command = AddCommand(
      app, line, verb, enable ? "Start tracing events" : "Stop tracing events",
      std::string("Writes ") + (enable ? "1" : "0") +
          " to events/<system>/<name>/enable of every event in available_events\n"
          "that an EVENT selects. Fails with ENOENT, changing nothing, if an EVENT selects none.\n" +
          kEventHelp);
  command->add_option("EVENT", line.words, "Events to " + verb)->required();
  command->callback([&line, enable] {
    line.run = [&line, enable](const std::string& dir) { return cli::SetEnabled(dir, line.words, enable); };
  });
}

void AddTraceCommand(CLI::App& app, CommandLine& line) {
  CLI::App* trace = AddCommand(
      app, line, "trace", "Stream events to stdout, alone or while a command runs",
      std::string(
          "Prints trace_pipe. The events selected with -e (default: all) are enabled before COMMAND\n"
          "starts, including those created later, and disabled again when udiag exits.\n"
          "With COMMAND: runs it with $UDIAG_DIR set to the daemon's directory, traces until it\n"
          "exits and its last events have arrived, then exits with its status (128+N if signal N\n"
          "killed it; 127 if it cannot be found). Ctrl-C goes to COMMAND; SIGINT or SIGTERM sent\n"
          "to udiag alone is passed on to it. Without COMMAND: traces until Ctrl-C or SIGTERM.\n"
          "If no udiagd is running, a private one is started for the duration.\n") +
          kEventHelp + kFilterHelp + "\nExample: udiag trace -e 'count_*' -- ./my_app --verbose");
  AddEventOptions(trace, &line.trace.events, &line.trace.filters, "EVENT to enable (repeatable)");
  trace->add_option("COMMAND", line.trace.command, "Command to run and trace (put it after `--`)");
  trace->callback([&] {
    line.run = [&](const std::string& dir) {
      line.trace.dir = dir;
      return cli::Trace(line.trace);
    };
  });
}

void AddHistCommand(CLI::App& app, CommandLine& line) {
  CLI::App* hist = AddCommand(
      app, line, "hist", "Count an event's hits by key (an ftrace hist trigger), alone or while a command runs",
      "Sets 'hist:keys=KEY[:vals=VAL][:sort=SORT] [if FILTER]' on EVENT in an instance of its own\n"
      "(instances/hist-<pid>, removed when udiag exits) and prints its hist file in the kernel's\n"
      "layout when COMMAND exits (with its status) or, without COMMAND, on Ctrl-C or SIGTERM.\n"
      "KEY and VAL are the event's fields, KEY with .hex .log2 .buckets=N .execname, VAL with\n"
      ".hex .percent .graph (docs/triggers.md). EVENT may be registered after udiag starts\n"
      "(by COMMAND): the histogram starts then.\n"
      "If no udiagd is running, a private one is started for the duration.\n"
      "Example: udiag hist -e http_request -k status -v latency_ns --sort latency_ns.descending -- ./server");
  hist->add_option("-e,--event", line.hist.event, "EVENT: 'name' or 'system:name'")->required();
  hist->add_option("-k,--keys", line.hist.keys, "Key fields (repeatable, or comma-separated)")->required();
  hist->add_option("-v,--vals", line.hist.vals, "Value fields to sum (repeatable, or comma-separated)");
  hist->add_option("--sort", line.hist.sort, "Sort fields: hitcount (default), a key or a value, .descending");
  hist->add_option("-f,--filter", line.hist.filter, "Count only events passing this ftrace filter");
  hist->add_flag("--json", line.hist.json, "Print the table as JSON");
  hist->add_option("COMMAND", line.hist.command, "Command to run (put it after `--`)");
  hist->callback([&] {
    line.run = [&](const std::string& dir) {
      line.hist.dir = dir;
      return cli::Hist(line.hist);
    };
  });
}

void AddMountCommands(CLI::App& app, CommandLine& line) {
  CLI::App* mount = AddCommand(
      app, line, "mount", "Mount the tracefs tree on a directory (FUSE)",
      "Serves the daemon's tree at DIR so that echo, cat, >> and > work as in tracefs:\n"
      "  echo 'u:test u32 count' >> DIR/dynamic_events; cat DIR/user_events_status\n"
      "Returns once mounted; the server runs in the background (in the foreground with\n"
      "--foreground) until `udiag umount DIR`, and unmounts DIR itself if the daemon goes away.");
  mount->add_option("DIR", line.path, "Directory to mount on")->required();
  mount->add_flag("-f,--foreground", line.foreground, "Serve in the foreground until unmounted or interrupted");
  mount->callback([&] {
    line.run = [&](const std::string& dir) { return cli::MountTree(dir, line.path, line.foreground); };
  });

  CLI::App* umount = app.add_subcommand("umount", "Unmount a directory mounted with `udiag mount`");
  umount->footer("Works whether or not the mount's server and the daemon are still running.");
  umount->add_option("DIR", line.path, "Mounted directory")->required();
  umount->callback([&] { line.run = [&](const std::string&) { return cli::UnmountTree(line.path); }; });
}

void AddRunCommand(CLI::App& app, CommandLine& line) {
  CLI::App* run = AddCommand(
      app, line, "run", "Run an unmodified user_events program against udiagd",
      "Runs COMMAND in a private mount namespace where /sys/kernel/tracing (and\n"
      "/sys/kernel/debug/tracing if it exists) is the daemon's tree (FUSE), with\n"
      "libudiag-preload.so in LD_PRELOAD and $UDIAG_DIR set. Exits with COMMAND's status\n"
      "(128+N if signal N killed it; 127 if it cannot be found). If no udiagd is running,\n"
      "a private one is started for the duration. Not root: needs unprivileged user namespaces.\n"
      "Example: udiag run -- ./my_app --verbose");
  run->add_option("COMMAND", line.command, "Command to run (put it after `--`)")->required();
  run->callback([&] { line.run = [&](const std::string& dir) { return cli::Run(dir, line.command); }; });
}

std::optional<udiag::record::TraceFormat> FormatFlag(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return udiag::record::ParseTraceFormat(name);
}

void AddRecordCommands(CLI::App& app, CommandLine& line) {
  auto formats = CLI::IsMember({"dat", "ctf", "perfetto"});
  CLI::App* record = AddCommand(
      app, line, "record", "Record events from every process into a trace file",
      std::string(
          "Records through an instance of its own (instances/record-<pid>, removed when udiag exits)\n"
          "until COMMAND exits and its last events have arrived, or until Ctrl-C without COMMAND.\n"
          "The events selected with -e (default: all) are enabled, including those created later.\n"
          "Formats: dat = trace-cmd trace.dat v6 (trace-cmd report, KernelShark), ctf = CTF 1.8\n"
          "directory (babeltrace2, Trace Compass), perfetto = Perfetto protobuf (ui.perfetto.dev);\n"
          "default from -o's name: *.pftrace perfetto, *.ctf or a directory ctf, else dat.\n"
          "Starts a private udiagd when none runs (and sets $UDIAG_DIR for COMMAND). On a terminal\n"
          "a progress line shows events, MB, events/s and losses; a summary per event ends it.\n"
          "With --overwrite the instance is a flight recorder: it keeps the newest events that fit\n"
          "in --size KB and they are written when recording ends.\n"
          "With --block nothing is lost while udiag keeps up: a producer thread whose ring is full\n"
          "waits (up to MS, default 1000, once until the ring drains) instead of dropping events,\n"
          "so the fastest producers are slowed to the recording's pace.\n") +
          kEventHelp + kFilterHelp + "\nExample: udiag record -o app.dat -- ./app; trace-cmd report app.dat");
  AddEventOptions(record, &line.record.events, &line.record.filters, "Events to record (repeatable)");
  record->add_option("-o,--output", line.record.output, "Output file or CTF directory")->capture_default_str();
  record->add_option("--format", line.format, "dat, ctf or perfetto (default: from the output's name)")
      ->check(formats);
  CLI::Option* overwrite =
      record->add_flag("--overwrite", line.record.overwrite, "Flight recorder: keep the newest events, write at the end");
  CLI::Option* block =
      record->add_option("--block", line.record.block_ms,
                         fmt::format("Producers whose ring is full wait up to MS (default {}) instead of dropping",
                                     cli::kDefaultBlockMs))
          ->expected(0, 1)
          ->type_name("[=MS]")
          ->excludes(overwrite);
  record->add_option("--size", line.record.size_kb,
                     fmt::format("Buffer size of the recording instance in KB (default {}); a trace.dat "
                                 "recording's pages waiting for the disk may take as much, at least 98304",
                                 line.record.size_kb));
  record->add_option("COMMAND", line.record.command, "Command to run (put it after `--`)");
  record->callback([&, block] {
    // A bare --block comes with one empty value.
    if (block->count() > 0 && block->results() == std::vector<std::string>{""}) line.record.block_ms = cli::kDefaultBlockMs;
    line.run = [&](const std::string& dir) {
      line.record.dir = dir;
      line.record.format = FormatFlag(line.format);
      return cli::Record(line.record);
    };
  });

  CLI::App* report = AddCommand(app, line, "report", "Print a trace file (trace.dat or CTF) as text or JSON",
                                "Like `trace-cmd report`: one line per event, in time order, with lost-event\n"
                                "notices where events were lost. --json prints one JSON object per event with\n"
                                "typed fields (EventHeader events decoded by name and type).");
  report->add_option("FILE", line.path, "trace.dat file or CTF directory written by udiag")->required();
  report->add_flag("--json", line.json, "One JSON object per event");
  report->callback([&] { line.run = [&](const std::string&) { return cli::Report(line.path, line.json); }; });

  CLI::App* recover =
      AddCommand(app, line, "recover", "Finish a trace whose recording was killed",
                 "A trace.dat is readable while `udiag record` writes it, up to its last\n"
                 "checkpoint (every 250 ms). After the recorder was killed (or the disk filled),\n"
                 "`udiag recover FILE` also keeps the complete pages written after that\n"
                 "checkpoint, repairs a header torn by the kill, and turns the sparse file back\n"
                 "into an ordinary one, in place. Of a CTF directory or a Perfetto file it cuts\n"
                 "the packet the kill tore, if any. A finished trace is left as it is.");
  recover->add_option("FILE", line.path, "trace.dat, CTF directory or Perfetto file left by udiag record")
      ->required();
  recover->callback([&] { line.run = [&](const std::string&) { return cli::Recover(line.path); }; });

  CLI::App* convert = AddCommand(app, line, "convert", "Convert a trace file between formats",
                                 "Reads IN (trace.dat or CTF written by udiag) and writes OUT in --format\n"
                                 "(default: from OUT's name, as for record). Perfetto files cannot be read back.");
  convert->add_option("IN", line.path, "Input trace")->required();
  convert->add_option("OUT", line.command, "Output trace")->required()->expected(1);
  convert->add_option("--format", line.format, "dat, ctf or perfetto")->check(formats);
  convert->callback([&] {
    line.run = [&](const std::string&) { return cli::Convert(line.path, line.command.at(0), FormatFlag(line.format)); };
  });
}

void ExportOptionsFlags(CLI::App* command, CommandLine& line) {
  cli::ExportOptions& o = line.export_options;
  command->add_option("--clickhouse", o.url, "ClickHouse HTTP URL, e.g. http://127.0.0.1:8123")->required();
  command->add_option("--database", o.database, "Database of the tables")->capture_default_str();
  command->add_option("-e,--event", o.events, "Events to export (repeatable)");
  command->add_option("--host", o.host, "Value of the host column (default: this machine's name)");
  command->add_option("--cluster", o.cluster, "ClickHouse cluster for Distributed tables");
  command->add_flag("--create-schema", o.create_schema, "Create the database and udiag_lost, then exit");
  command->add_option("--from", o.from, "Load a trace.dat or CTF instead of live events");
  command->add_option("--spool", o.spool, "Directory for batches ClickHouse did not take")->capture_default_str();
  command->add_option("--spool-mb", o.spool_mb, "Most the spool holds, in MB")->capture_default_str();
  command->add_option("--retry", o.retry_s, "At the end, seconds to wait for ClickHouse to take the spool")
      ->capture_default_str();
  command->add_option("--size", o.size_kb, "Buffer size of the export instance in KB")->capture_default_str();
  command->add_option("COMMAND", o.command, "Command to run (put it after `--`)");
  command->callback([&] {
    line.run = [&](const std::string& dir) {
      line.export_options.dir = dir;
      return cli::Export(line.export_options);
    };
  });
}

void AddExportCommand(CLI::App& app, CommandLine& line) {
  CLI::App* command = AddCommand(
      app, line, "export", "Stream events (or a trace file) into ClickHouse tables",
      std::string("Like record, through an instance of its own, but events go in batches to ClickHouse over\n"
                  "HTTP (RowBinary): one typed table per event, common columns batch_id, host, boot_id, ts_ns,\n"
                  "cpu, pid, tid, comm; losses in udiag_lost. Batches ClickHouse does not take are kept in\n"
                  "--spool (bounded by --spool-mb) and sent when it is back; each lands exactly once.\n"
                  "With --cluster, tables are <event>_local (MergeTree) plus a Distributed <event> over them.\n") +
          kEventHelp + "\nExample: udiag export --clickhouse http://db:8123 -- ./app. Reference: docs/fleet.md");
  ExportOptionsFlags(command, line);
}

void AddMmiotraceCommands(CLI::App& app, CommandLine& line) {
  CLI::App* mmiotrace = AddCommand(
      app, line, "mmiotrace", "Log a command's device (MMIO) accesses in mmiotrace's format",
      "Runs COMMAND with libudiag-mmiotrace.so preloaded. Every shared mapping it makes of a device\n"
      "(/dev/uio*, /sys/bus/pci/devices/*/resource*, VFIO regions, /dev/mem, or a --map file) is\n"
      "traced: the log gets MAP/UNMAP, one R or W line per access (UNKNOWN when not decoded) and\n"
      "MARK lines from `udiag mark`, in the kernel's mmiotrace format, with real pids and pcs.\n"
      "Forked children and exec'd programs are traced too. The accesses are also the events\n"
      "mmiotrace_rw, mmiotrace_map and mmiotrace_mark of udiagd. Exits with COMMAND's status;\n"
      "prints a summary on stderr. Reference: docs/mmiotrace.md.\n"
      "Example: udiag mmiotrace --map /dev/shm/simdev -o simdev.log -- ./mmio_driver /dev/shm/simdev");
  mmiotrace->add_option("-o,--output", line.mmiotrace.output, "Write the log to FILE (default: stdout)");
  mmiotrace->add_option("--map", line.mmiotrace.maps, "Also trace shared mappings of PATH (phys = file offset); repeatable")
      ->allow_extra_args(false);
  mmiotrace->add_option("--mode", line.mmiotrace.mode, "How accesses are trapped (default: emulate)")
      ->check(CLI::IsMember({"emulate", "rebase-step", "single-step"}));
  mmiotrace->add_option("COMMAND", line.mmiotrace.command, "Command to run (put it after `--`)")->required();
  mmiotrace->callback([&] {
    line.run = [&](const std::string& dir) {
      line.mmiotrace.dir = dir;
      return cli::Mmiotrace(line.mmiotrace);
    };
  });

  CLI::App* mark = AddCommand(app, line, "mark", "Add a MARK line to the running mmiotrace sessions",
                              "The words are joined by spaces. Every `udiag mmiotrace` of this daemon directory\n"
                              "gets the mark, stamped now; fails if none is running.");
  mark->add_option("TEXT", line.words, "Text of the mark")->required();
  mark->callback([&] { line.run = [&](const std::string& dir) { return cli::Mark(dir, line.words); }; });
}

void AddBpftraceCommand(CLI::App& app, CommandLine& line) {
  CLI::App* command = AddCommand(
      app, line, "bpftrace", "Run a bpftrace program on user events",
      "Runs the real bpftrace. Probes user_events:NAME (or tracepoint:user_events:NAME) become\n"
      "udiagd's USDT probe udiag:event for that event, and args->FIELD reads the field at the offset\n"
      "and type of the event's format (strings included: str(args->path)); pid and tid are the\n"
      "producer's. Other probes (BEGIN, END, interval, kprobes...) are passed on untouched.\n"
      "A glob (user_events:http_*, ?, [...]) stands for every matching event udiagd has at start.\n"
      "The named events must exist; they are enabled until udiag exits. Options after `--`\n"
      "go to bpftrace. Needs what bpftrace needs (root). Reference: docs/bpf.md.\n"
      "Example: udiag bpftrace -e 'user_events:http_request /args->status >= 500/ "
      "{ @[str(args->path)] = count(); }'");
  command->add_option("-e", line.bpftrace.program, "The program (else read from FILE)");
  command->add_flag("--print-program", line.bpftrace.print_program,
                    "Print the program given to bpftrace, and exit");
  command->add_option("FILE", line.bpftrace.file, "Program file (without -e)");
  command->add_option("BPFTRACE_OPTIONS", line.bpftrace.bpftrace_args, "Options for bpftrace (put them after `--`)");
  command->callback([&] {
    line.run = [&](const std::string& dir) {
      line.bpftrace.dir = dir;
      return cli::Bpftrace(line.bpftrace);
    };
  });
}

// A closed stdin, stdout or stderr would be reused by the next open(), and a
// socket or a child's stream could land on it (CI runners may start us with
// no stdin).
void KeepStandardFdsOpen() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) open("/dev/null", O_RDWR);
  }
}

}  // namespace

int main(int argc, char** argv) {
  KeepStandardFdsOpen();
  CommandLine line;
  CLI::App app{kDescription, "udiag"};
  app.footer(kFooter);
  app.require_subcommand(1);
  AddDirOption(&app, line);
  AddFileCommands(app, line);
  AddInstanceCommands(app, line);
  AddEnableCommand(app, line, /*enable=*/true);
  AddEnableCommand(app, line, /*enable=*/false);
  AddTraceCommand(app, line);
  AddHistCommand(app, line);
  AddRecordCommands(app, line);
  AddExportCommand(app, line);
  AddMountCommands(app, line);
  AddRunCommand(app, line);
  AddMmiotraceCommands(app, line);
  AddBpftraceCommand(app, line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : cli::kExitUsage;
  }
  return line.run(udiag::base::ResolveDaemonDir(line.dir_flag));
}
