// ftrace hist triggers: `hist:keys=...[:vals=...][:sort=...][:size=N]
// [:name=NAME][:pause|:cont|:clear] [if filter]`, the aggregation, and the
// `hist` file's table in the kernel's layout (trace_events_hist.c, v6.x;
// histogram.rst). Variables, actions and synthetic events are not here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "filter/filter_fields.h"
#include "schema/event_description.h"

namespace udiag::trigger {

enum class HistFlag : uint8_t { kNone, kHex, kLog2, kExecname, kBuckets, kPercent, kGraph };

struct HistField {
  std::string name;           // as written, without the modifier
  filter::FilterField field;  // where it is in the record
  HistFlag flag = HistFlag::kNone;
  uint64_t buckets = 0;       // .buckets=N
};

struct SortKey {
  int index = 0;  // 0: hitcount; 1..vals: a value; then the keys
  bool descending = false;
};

enum class HistControl : uint8_t { kNone, kPause, kCont, kClear };

struct HistSpec {
  std::vector<HistField> keys;
  std::vector<HistField> vals;  // besides hitcount, which is always kept
  std::vector<SortKey> sort;    // default: hitcount ascending
  uint32_t size = 2048;         // entries, a power of two
  std::string name;
  HistControl control = HistControl::kNone;
  std::string filter;
};

// Parses the parameter of a hist trigger ("keys=...:vals=..."), resolving
// fields against `fields`. Returns 0 or EINVAL.
int ParseHist(std::string_view param, const std::vector<schema::Field>& fields, HistSpec* out);

// Whether two specs make the same histogram (the kernel's hist_trigger_match):
// `!hist:...` removes and `:pause` finds a histogram by this.
bool SameHist(const HistSpec& a, const HistSpec& b);

// "hist:keys=...:vals=hitcount...:sort=...:size=N[ if F] [active]\n": the
// trigger file's line, and the hist file's "trigger info".
std::string HistInfo(const HistSpec& spec, bool paused);

class Histogram {
 public:
  explicit Histogram(HistSpec spec) : spec_(std::move(spec)) {}
  const HistSpec& spec() const { return spec_; }
  bool paused() const { return paused_; }
  // Whether Add() reads the thread's name (.execname or a COMM key).
  bool needs_comm() const;
  void set_paused(bool paused) { paused_ = paused; }
  void Clear();

  // One event that passed the trigger's filter. `comm` names its thread (.execname).
  void Add(const filter::RecordContext& context);
  // This histogram's part of the `hist` file.
  std::string Render() const;

 private:
  struct Entry {
    std::vector<uint64_t> numbers;     // per key (0 for string keys)
    std::vector<std::string> strings;  // per key ("" for numeric keys)
    std::string comm;                  // .execname: the first writer's name
    uint64_t hits = 0;
    std::vector<uint64_t> sums;        // per value
  };
  std::string KeyText(const Entry& e) const;
  // " name: value" of value `i` (.percent of the column's total, .graph of its maximum).
  std::string ValueText(size_t i, uint64_t value, uint64_t total, uint64_t max) const;
  HistSpec spec_;
  bool paused_ = false;
  std::map<std::string, Entry> entries_;  // by the key's bytes
  uint64_t hits_ = 0;
  uint64_t drops_ = 0;
};

}  // namespace udiag::trigger
