// ftrace hist triggers: `hist:keys=...[:vals=...][:sort=...][:size=N]
// [:name=NAME][:pause|:cont|:clear] [if filter]`, the aggregation, and the
// `hist` file's table in the kernel's layout (trace_events_hist.c, v6.x;
// histogram.rst §2.2): `common_timestamp[.usecs]`, variables (`ts0=...`),
// references to them (`$ts0`) and `+ - * /` expressions. Which histogram
// defines a variable another refers to is the caller's business (BindRef):
// the daemon looks it up among its instance's histograms.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "filter/filter_fields.h"
#include "schema/event_description.h"
#include "trigger/hist_error.h"

namespace udiag::trigger {

enum class HistFlag : uint8_t { kNone, kHex, kLog2, kExecname, kBuckets, kPercent, kGraph };

// Where a key's or value's number comes from.
enum class HistSource : uint8_t {
  kField,      // the record's bytes (or its cpu, or COMM)
  kTimestamp,  // common_timestamp: the record's time, in ns (µs with .usecs)
  kVarRef,     // $name: a variable of this or another histogram, at the same key
  kConstant,   // a number in an expression
  kExpr,       // operands[0] op operands[1]
};

struct HistField {
  std::string name;  // as written, without the modifier (kVarRef: the variable; kExpr: the whole text)
  filter::FilterField field;  // kField: where it is in the record
  HistFlag flag = HistFlag::kNone;
  uint64_t buckets = 0;       // .buckets=N
  HistSource source = HistSource::kField;
  bool usecs = false;               // common_timestamp.usecs
  uint64_t constant = 0;            // kConstant
  size_t ref = 0;                   // kVarRef: its index in HistSpec::refs
  char op = 0;                      // kExpr: '+', '-', '*' or '/'
  std::vector<HistField> operands;  // kExpr: two
  std::string var;                  // a variable's definition ("ts0=..."): its name

  bool is_string() const { return source == HistSource::kField && field.is_string(); }
};

// A `$name` in a histogram: the variable it reads.
struct VarRef {
  std::string name;
  bool read_once = false;     // in an expression: reading it unsets it (histogram.rst §2.2.1)
  std::optional<size_t> own;  // one of this histogram's own variables (its index in HistSpec::vars)
};

struct SortKey {
  int index = 0;  // 0: hitcount; 1..vals: a value; then the keys
  bool descending = false;
};

enum class HistControl : uint8_t { kNone, kPause, kCont, kClear };

// `handler.action` (histogram.rst §2.2.3): when, and what, a histogram does
// beyond counting as an entry is updated.
enum class Handler : uint8_t { kOnMatch, kOnMax, kOnChange };
enum class ActionKind : uint8_t { kTrace, kSave, kSnapshot };

struct HistAction {
  Handler handler = Handler::kOnMatch;
  ActionKind kind = ActionKind::kTrace;
  std::string match_system, match_event;  // onmatch(system.event)
  HistField tracked;                      // onmax($v), onchange($v): the reference
  std::string synth;                      // trace: the synthetic event to generate
  bool trace_keyword = false;             // trace(synth,...) rather than synth(...)
  std::vector<HistField> params;          // trace: its field values; save: the fields kept
  std::string text;                       // ":onmatch(...).trace(...)" as the trigger file prints it
};

struct HistSpec {
  std::vector<HistField> keys;
  std::vector<HistField> vals;  // besides hitcount, which is always kept
  std::vector<HistField> vars;  // variables: set per key, not shown
  std::vector<VarRef> refs;     // every $name in keys, vals, vars and actions
  std::vector<HistAction> actions;
  std::vector<SortKey> sort;    // default: hitcount ascending
  uint32_t size = 2048;         // entries, a power of two
  std::string name;
  HistControl control = HistControl::kNone;
  std::string filter;
};

// Parses the parameter of a hist trigger ("keys=...:vals=..."), resolving
// fields against `fields`. Returns 0 or EINVAL (then `error`, when given,
// says why, if the kernel would).
int ParseHist(std::string_view param, const std::vector<schema::Field>& fields, HistSpec* out,
              HistError* error = nullptr);

// Whether two specs make the same histogram (the kernel's hist_trigger_match):
// `!hist:...` removes and `:pause` finds a histogram by this.
bool SameHist(const HistSpec& a, const HistSpec& b);

// Whether `other` may share the histogram `named` made with the same `name=`
// (the kernel's hist_trigger_match, filters aside): the same keys, values,
// variables and sort, of fields of the same kind and size. Histograms with
// references or actions are not shared (docs/compat.md).
bool CanShare(const HistSpec& named, const HistSpec& other);

// "hist:keys=...:vals=hitcount...:sort=...:size=N[ if F] [active]\n": the
// trigger file's line, and the hist file's "trigger info".
std::string HistInfo(const HistSpec& spec, bool paused);

// Where a histogram's actions go: the daemon generates the synthetic events
// and takes the snapshots.
class HistSink {
 public:
  virtual ~HistSink() = default;
  // spec().actions[action] (a trace) generates its synthetic event with these field values.
  virtual void Trace(size_t action, std::span<const uint64_t> values) = 0;
  // A snapshot() action fired.
  virtual void Snapshot() = 0;
};

// What one record gives a histogram: its bytes, cpu and thread name, and its time.
struct HistInput {
  filter::RecordContext context;
  uint64_t timestamp_ns = 0;
};

class Histogram {
 public:
  explicit Histogram(HistSpec spec);
  const HistSpec& spec() const { return spec_; }
  bool paused() const { return paused_; }
  // Whether Add() reads the thread's name (.execname or a COMM key).
  bool needs_comm() const;
  void set_paused(bool paused) { paused_ = paused; }
  void Clear();

  // The index of variable `name` in spec().vars.
  std::optional<size_t> FindVar(std::string_view name) const;
  // Makes reference `ref` (not one of our own) read variable `var` of
  // `owner`, which the caller keeps alive as long as this histogram.
  void BindRef(size_t ref, std::shared_ptr<Histogram> owner, size_t var);
  // Whether another histogram reads our variables (removing us is EBUSY).
  bool referenced() const { return referenced_ > 0; }
  // Undoes BindRef's count on the histograms this one reads (it goes away).
  void Unbind();

  // One event that passed the trigger's filter. Events whose references to
  // other histograms' variables are not all set at their key are skipped
  // (not counted), as the kernel does. Returns whether an entry was updated;
  // then the actions run, into `sink` (when given). `as`: the spec of
  // another event sharing this histogram (name=), with its own fields' places.
  bool Add(const HistInput& input, HistSink* sink = nullptr, const HistSpec* as = nullptr);
  // This histogram's part of the `hist` file (`as`: the trigger info of an event sharing it).
  std::string Render(const HistSpec* as = nullptr) const;

 private:
  struct Entry {
    std::vector<uint64_t> numbers;     // per key (0 for string keys)
    std::vector<std::string> strings;  // per key ("" for numeric keys)
    std::string comm;                  // .execname: the first writer's name
    uint64_t hits = 0;
    std::vector<uint64_t> sums;        // per value
    std::vector<uint64_t> vars;        // per variable
    std::vector<bool> set;             // per variable: whether it holds a value
    struct Tracked {                   // per onmax/onchange action
      uint64_t value = 0;              // the max, or the last value
      std::vector<uint64_t> numbers;   // save(): the fields at that event
      std::vector<std::string> strings;
    };
    std::vector<Tracked> tracked;
  };
  // The last snapshot() taken, for the "Snapshot taken" lines.
  struct SnapshotInfo {
    bool taken = false;
    uint64_t value = 0;
    std::string key;
    size_t action = 0;
  };
  void RunActions(const HistSpec& spec, const std::string& key, Entry& e, const HistInput& in,
                  const std::vector<uint64_t>& refs, HistSink* sink);
  std::string ActionsText(const Entry& e) const;
  // The value of variable `var` at `key`, unset if `once`.
  std::optional<uint64_t> ReadVar(const std::string& key, size_t var, bool once);
  uint64_t Evaluate(const HistField& f, const HistInput& in, const std::vector<uint64_t>& refs) const;

  std::string KeyText(const Entry& e) const;
  // " name: value" of value `i` (.percent of the column's total, .graph of its maximum).
  std::string ValueText(size_t i, uint64_t value, uint64_t total, uint64_t max) const;
  struct Binding {
    std::shared_ptr<Histogram> owner;
    size_t var = 0;
  };
  HistSpec spec_;
  std::vector<Binding> bindings_;  // per spec_.refs entry (own ones unused)
  int referenced_ = 0;
  bool paused_ = false;
  std::map<std::string, Entry> entries_;  // by the key's bytes
  uint64_t hits_ = 0;
  uint64_t drops_ = 0;
  SnapshotInfo snapshot_;
};

}  // namespace udiag::trigger
