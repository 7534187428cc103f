#include "trigger/hist.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "filter/kernel_number.h"

namespace udiag::trigger {
namespace {

// The kernel's tracing_map limits.
constexpr size_t kMaxKeys = 3;      // TRACING_MAP_KEYS_MAX
constexpr size_t kMaxVals = 2;      // TRACING_MAP_VALS_MAX, hitcount aside
constexpr size_t kMaxSortKeys = 2;  // TRACING_MAP_SORT_KEYS_MAX
constexpr int kMinBits = 7, kMaxBits = 17;
constexpr size_t kMaxStringKey = 256;  // MAX_FILTER_STR_VAL
constexpr size_t kMaxVars = 16;        // TRACING_MAP_VARS_MAX
constexpr long kMaxSubexpr = 3;        // the kernel's "Too many subexpressions (3 max)"

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t at = text.find(sep);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::string_view FlagName(HistFlag flag) {
  switch (flag) {
    case HistFlag::kHex: return ".hex";
    case HistFlag::kLog2: return ".log2";
    case HistFlag::kExecname: return ".execname";
    case HistFlag::kBuckets: return ".buckets";
    case HistFlag::kPercent: return ".percent";
    case HistFlag::kGraph: return ".graph";
    case HistFlag::kNone: break;
  }
  return "";
}

// "name[.modifier]" of a key or value.
int ParseField(std::string_view text, const std::vector<schema::Field>& fields, bool key, HistField* out,
               HistError* err) {
  size_t dot = text.find('.');
  out->name = std::string(text.substr(0, dot));
  auto field = filter::FindField(fields, out->name);
  if (out->name.empty() || !field) return HistFail(err, HistErrorCode::kFieldNotFound, out->name);
  out->field = *field;
  if (out->field.cls == filter::FieldClass::kCpu) out->name = "common_cpu";
  if (dot != std::string_view::npos) {
    std::string_view mod = text.substr(dot + 1);
    if (mod == "hex") {
      out->flag = HistFlag::kHex;
    } else if (key && mod == "log2") {
      out->flag = HistFlag::kLog2;
    } else if (key && mod == "execname") {
      out->flag = HistFlag::kExecname;
    } else if (!key && mod == "percent") {
      out->flag = HistFlag::kPercent;
    } else if (!key && mod == "graph") {
      out->flag = HistFlag::kGraph;
    } else if (key && mod.starts_with("buckets=")) {
      auto n = filter::KernelStrToU64(mod.substr(8));
      if (!n || *n == 0) return HistFail(err, HistErrorCode::kBadFieldModifier, mod);
      out->flag = HistFlag::kBuckets;
      out->buckets = *n;
    } else {
      return HistFail(err, HistErrorCode::kBadFieldModifier, mod);
    }
  }
  // Values are sums: numbers only; modifiers other than .hex change a key's bucket.
  if (out->field.is_string() && (!key || out->flag != HistFlag::kNone)) return EINVAL;
  // A number the kernel has no hist function for (a struct, an array of ints).
  const uint32_t size = out->field.size;
  if (out->field.cls == filter::FieldClass::kNumber && size != 1 && size != 2 && size != 4 && size != 8) return EINVAL;
  return 0;
}

constexpr std::string_view kTimestamp = "common_timestamp";

bool IsIdentifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// One operand: `$var`, a decimal constant, common_timestamp[.usecs] or a field.
int ParseOperand(std::string_view text, const std::vector<schema::Field>& fields, bool key, bool in_expr,
                 HistSpec* spec, HistField* out, HistError* err) {
  if (text.starts_with('$')) {
    if (key) return HistFail(err, HistErrorCode::kInvalidRefKey, text);  // keys are fields (docs/compat.md)
    if (!IsIdentifier(text.substr(1))) return HistFail(err, HistErrorCode::kVarNotFound, text);
    out->source = HistSource::kVarRef;
    out->name = std::string(text.substr(1));
    out->ref = spec->refs.size();
    spec->refs.push_back({out->name, in_expr, std::nullopt});
    return 0;
  }
  if (in_expr && !text.empty() && text.front() >= '0' && text.front() <= '9') {
    auto n = filter::KernelStrToU64(text);
    if (!n) return HistFail(err, HistErrorCode::kExpectNumber, text);
    out->source = HistSource::kConstant;
    out->constant = *n;
    out->name = std::string(text);
    return 0;
  }
  if (text == kTimestamp || (text.starts_with(kTimestamp) && text.substr(kTimestamp.size()) == ".usecs")) {
    out->source = HistSource::kTimestamp;
    out->name = std::string(kTimestamp);
    out->usecs = text.size() > kTimestamp.size();
    return 0;
  }
  return ParseField(text, fields, key, out, err);
}

// `a+b`, `a-b`, `a*b`, `a/b` (left to right, * and / first), or one operand.
int ParseExpr(std::string_view text, const std::vector<schema::Field>& fields, bool key, bool in_expr,
              HistSpec* spec, HistField* out, HistError* err) {
  if (!in_expr && std::count_if(text.begin(), text.end(), [](char c) {
                    return std::string_view("+-*/").find(c) != std::string_view::npos;
                  }) > kMaxSubexpr) {
    return HistFail(err, HistErrorCode::kTooManySubexpr, text);
  }
  size_t at = text.find_last_of("+-");
  if (at == std::string_view::npos) at = text.find_last_of("*/");
  if (at == std::string_view::npos) return ParseOperand(text, fields, key, in_expr, spec, out, err);
  if (key) return EINVAL;
  out->source = HistSource::kExpr;
  out->name = std::string(text);
  out->op = text[at];
  out->operands.resize(2);
  if (int e = ParseExpr(text.substr(0, at), fields, key, true, spec, &out->operands[0], err)) return e;
  if (int e = ParseExpr(text.substr(at + 1), fields, key, true, spec, &out->operands[1], err)) return e;
  return 0;
}

std::string FieldText(const HistField& f) {
  std::string out = f.var.empty() ? "" : f.var + "=";
  switch (f.source) {
    case HistSource::kTimestamp:
      return out + f.name + (f.usecs ? ".usecs" : "");
    case HistSource::kVarRef:
      return out + "$" + f.name;
    case HistSource::kConstant:
    case HistSource::kExpr:
      return out + f.name;
    case HistSource::kField:
      break;
  }
  out += f.name + std::string(FlagName(f.flag));
  if (f.flag == HistFlag::kBuckets) out += fmt::format("={}", f.buckets);
  return out;
}

bool UsesTimestamp(const HistField& f) {
  return f.source == HistSource::kTimestamp ||
         std::any_of(f.operands.begin(), f.operands.end(),
                     [](const HistField& o) { return UsesTimestamp(o); });
}

// The kernel prints the clock of a histogram that reads timestamps.
bool UsesTimestamps(const HistSpec& spec) {
  for (const auto* list : {&spec.keys, &spec.vals, &spec.vars}) {
    if (std::any_of(list->begin(), list->end(), UsesTimestamp)) return true;
  }
  return false;
}

int ParseSort(std::string_view text, HistSpec* spec, HistError* err) {
  for (std::string_view item : Split(text, ',')) {
    size_t dot = item.find('.');
    std::string_view name = item.substr(0, dot);
    SortKey key;
    if (dot != std::string_view::npos) {
      std::string_view order = item.substr(dot + 1);
      if (order != "descending" && order != "ascending") {
        return HistFail(err, HistErrorCode::kInvalidSortModifier, order);
      }
      key.descending = order == "descending";
    }
    if (name.empty()) return HistFail(err, HistErrorCode::kEmptySortField, "sort=");
    bool found = name == "hitcount";
    for (size_t i = 0; !found && i < spec->vals.size(); ++i) {
      if (spec->vals[i].name == name) key.index = static_cast<int>(1 + i), found = true;
    }
    for (size_t i = 0; !found && i < spec->keys.size(); ++i) {
      if (spec->keys[i].name == name) key.index = static_cast<int>(1 + spec->vals.size() + i), found = true;
    }
    if (!found) return HistFail(err, HistErrorCode::kInvalidSortField, name);
    if (spec->sort.size() == kMaxSortKeys) return HistFail(err, HistErrorCode::kTooManySortFields, "sort=");
    spec->sort.push_back(key);
  }
  return 0;
}

int ParseFields(std::string_view list, const std::vector<schema::Field>& fields, bool key, HistSpec* spec,
                HistError* err) {
  std::vector<HistField>& out = key ? spec->keys : spec->vals;
  for (std::string_view item : Split(list, ',')) {
    if (!key && item == "hitcount") continue;  // always kept
    HistField f;
    if (int e = ParseExpr(item, fields, key, false, spec, &f, err)) return e;
    out.push_back(std::move(f));
  }
  return out.size() > (key ? kMaxKeys : kMaxVals) ? EINVAL : 0;
}

// "ts0=common_timestamp.usecs[,b=field]": variables.
int ParseVars(std::string_view list, const std::vector<schema::Field>& fields, HistSpec* spec,
              HistError* err) {
  for (std::string_view item : Split(list, ',')) {
    size_t eq = item.find('=');
    HistField f;
    if (eq == std::string_view::npos || !IsIdentifier(item.substr(0, eq))) {
      return HistFail(err, HistErrorCode::kMalformedAssignment, item);
    }
    if (int e = ParseExpr(item.substr(eq + 1), fields, false, false, spec, &f, err)) return e;
    f.var = std::string(item.substr(0, eq));
    for (const HistField& v : spec->vars) {
      if (v.var == f.var) return HistFail(err, HistErrorCode::kDuplicateVar, f.var);
    }
    if (spec->vars.size() == kMaxVars) return HistFail(err, HistErrorCode::kTooManyVars, f.var);
    if (f.is_string()) return EINVAL;
    spec->vars.push_back(std::move(f));
  }
  return 0;
}

// "onmatch(sys.event).trace(synth,p,...)", "onmatch(sys.event).synth(p,...)",
// "onmax($v).save(f,...)", "onchange($v).snapshot()" (and onmax/onchange().trace()).
int ParseAction(std::string_view text, const std::vector<schema::Field>& fields, HistSpec* spec,
                HistError* err) {
  HistAction a;
  a.text = ":" + std::string(text);
  size_t open = text.find('('), close = text.find(").");
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      !text.ends_with(')')) {
    return HistFail(err, HistErrorCode::kNoClosingParen, text);
  }
  std::string_view handler = text.substr(0, open), arg = text.substr(open + 1, close - open - 1);
  std::string_view call = text.substr(close + 2, text.size() - close - 3);  // "name(params"
  size_t paren = call.find('(');
  if (paren == std::string_view::npos) return EINVAL;
  std::string_view action = call.substr(0, paren), params = call.substr(paren + 1);
  std::vector<std::string_view> list;
  if (!params.empty()) list = Split(params, ',');
  if (handler == "onmatch") {
    size_t dot = arg.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == arg.size()) {
      return HistFail(err, HistErrorCode::kSubsysNotFound, arg);
    }
    a.match_system = std::string(arg.substr(0, dot));
    a.match_event = std::string(arg.substr(dot + 1));
  } else if (handler == "onmax" || handler == "onchange") {
    a.handler = handler == "onmax" ? Handler::kOnMax : Handler::kOnChange;
    if (!arg.starts_with('$')) return HistFail(err, HistErrorCode::kOnxNotVar, arg);
    if (int e = ParseOperand(arg, fields, false, false, spec, &a.tracked, err)) return e;
  } else {
    return EINVAL;
  }
  if (action == "save" || action == "snapshot") {
    if (a.handler == Handler::kOnMatch) return HistFail(err, HistErrorCode::kActionMismatch, action);
    a.kind = action == "save" ? ActionKind::kSave : ActionKind::kSnapshot;
    if (a.kind == ActionKind::kSave && list.empty())
      return HistFail(err, HistErrorCode::kNoSaveParams, action);
    if (a.kind == ActionKind::kSnapshot && !list.empty()) return EINVAL;
  } else {
    a.trace_keyword = action == "trace";
    if (a.trace_keyword) {
      if (list.empty()) return EINVAL;
      action = list.front();
      list.erase(list.begin());
    }
    if (!IsIdentifier(action)) return EINVAL;
    a.synth = std::string(action);
  }
  for (std::string_view param : list) {
    // A qualified "system.event.$var" or "system.event.field": the name is enough here.
    if (size_t at = param.rfind('.'); at != std::string_view::npos && param.substr(at + 1).starts_with('$')) {
      param.remove_prefix(at + 1);
    }
    HistField f;
    int e = a.kind == ActionKind::kSave ? ParseField(param, fields, true, &f, err)
                                        : ParseExpr(param, fields, false, false, spec, &f, err);
    if (e) return e;
    if (a.kind == ActionKind::kTrace && f.is_string()) return EINVAL;  // numeric synthetic fields only
    a.params.push_back(std::move(f));
  }
  spec->actions.push_back(std::move(a));
  return 0;
}

// A `$name` of one of our own variables reads it after this event set it.
void ResolveOwnRefs(HistSpec* spec) {
  for (VarRef& ref : spec->refs) {
    for (size_t i = 0; i < spec->vars.size(); ++i) {
      if (spec->vars[i].var == ref.name) ref.own = i;
    }
  }
}

}  // namespace

int ParseHist(std::string_view param, const std::vector<schema::Field>& fields, HistSpec* out,
              HistError* error) {
  *out = HistSpec{};
  std::string_view sort;
  for (std::string_view attr : Split(param, ':')) {
    size_t eq = attr.find('=');
    std::string_view name = attr.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : attr.substr(eq + 1);
    int err = 0;
    if (name == "key" || name == "keys") {
      err = ParseFields(value, fields, true, out, error);
    } else if (name == "val" || name == "vals" || name == "values") {
      err = ParseFields(value, fields, false, out, error);
    } else if (name == "sort") {
      sort = value;
    } else if (name == "size") {
      auto size = filter::KernelStrToU64(value);
      if (!size || *size == 0 || *size > (1u << kMaxBits)) return EINVAL;
      int bits = std::bit_width(std::bit_ceil(*size)) - 1;
      if (bits < kMinBits) return EINVAL;
      out->size = 1u << bits;
    } else if (name == "name" && !value.empty()) {
      out->name = std::string(value);
    } else if (name == "clock") {
      if (value != "mono") return EINVAL;  // udiag's only clock (trace_clock)
    } else if (attr.starts_with("onmatch(") || attr.starts_with("onmax(") || attr.starts_with("onchange(")) {
      err = ParseAction(attr, fields, out, error);
    } else if (eq != std::string_view::npos && IsIdentifier(name)) {
      err = ParseVars(attr, fields, out, error);
    } else if (attr == "pause") {
      out->control = HistControl::kPause;
    } else if (attr == "cont" || attr == "continue") {
      out->control = HistControl::kCont;
    } else if (attr == "clear") {
      out->control = HistControl::kClear;
    } else {
      return EINVAL;  // variables, actions, clock=, nohitcount: not supported (docs/compat.md)
    }
    if (err) return err;
  }
  if (out->keys.empty()) return EINVAL;
  if (int err = ParseSort(sort.empty() ? "hitcount" : sort, out, error)) return err;
  ResolveOwnRefs(out);
  return 0;
}

bool SameHist(const HistSpec& a, const HistSpec& b) {
  auto same_fields = [](const std::vector<HistField>& x, const std::vector<HistField>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const HistField& p, const HistField& q) { return FieldText(p) == FieldText(q); });
  };
  auto same_sort = [](const SortKey& p, const SortKey& q) { return p.index == q.index && p.descending == q.descending; };
  return same_fields(a.keys, b.keys) && same_fields(a.vals, b.vals) && same_fields(a.vars, b.vars) &&
         a.name == b.name && a.filter == b.filter &&
         std::equal(a.actions.begin(), a.actions.end(), b.actions.begin(), b.actions.end(),
                    [](const HistAction& p, const HistAction& q) { return p.text == q.text; }) &&
         std::equal(a.sort.begin(), a.sort.end(), b.sort.begin(), b.sort.end(), same_sort);
}

bool CanShare(const HistSpec& named, const HistSpec& other) {
  HistSpec same_filter = other;
  same_filter.filter = named.filter;
  if (!SameHist(named, same_filter) || !named.refs.empty() || !named.actions.empty()) return false;
  // The kernel's compatible_field(): the same kind, size and sign, read at each event's own place.
  auto compatible = [](const std::vector<HistField>& x, const std::vector<HistField>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const HistField& p, const HistField& q) {
      return p.source == q.source && p.field.cls == q.field.cls && p.field.size == q.field.size &&
             p.field.is_signed == q.field.is_signed;
    });
  };
  return compatible(named.keys, other.keys) && compatible(named.vals, other.vals) &&
         compatible(named.vars, other.vars);
}

std::string HistInfo(const HistSpec& spec, bool paused) {
  std::string out = "hist:";
  if (!spec.name.empty()) out += "name=" + spec.name + ":";
  out += "keys=";
  for (size_t i = 0; i < spec.keys.size(); ++i) out += (i ? "," : "") + FieldText(spec.keys[i]);
  out += ":vals=hitcount";
  for (const HistField& v : spec.vals) out += "," + FieldText(v);
  for (size_t i = 0; i < spec.vars.size(); ++i) out += (i ? "," : ":") + FieldText(spec.vars[i]);
  out += ":sort=";
  for (size_t i = 0; i < spec.sort.size(); ++i) {
    const SortKey& s = spec.sort[i];
    if (i) out += ",";
    if (s.index == 0) {
      out += "hitcount";
    } else if (static_cast<size_t>(s.index) <= spec.vals.size()) {
      out += FieldText(spec.vals[s.index - 1]);
    } else {
      out += FieldText(spec.keys[s.index - 1 - spec.vals.size()]);
    }
    if (s.descending) out += ".descending";
  }
  out += fmt::format(":size={}", spec.size);
  if (UsesTimestamps(spec)) out += ":clock=mono";
  for (const HistAction& a : spec.actions) out += a.text;
  if (!spec.filter.empty()) out += " if " + spec.filter;
  out += paused ? " [paused]\n" : " [active]\n";
  return out;
}

namespace {

// A numeric field's value as the kernel widens it to u64 (signed ones sign-extended).
uint64_t NumberOf(const filter::FilterField& f, const filter::RecordContext& c) {
  if (f.cls == filter::FieldClass::kCpu) return c.cpu;
  const uint32_t size = f.size;
  if ((size != 1 && size != 2 && size != 4 && size != 8) || f.offset + uint64_t{size} > c.record.size()) return 0;
  uint64_t raw = 0;
  std::memcpy(&raw, c.record.data() + f.offset, size);
  if (f.is_signed && size < 8) {
    const int shift = 64 - 8 * static_cast<int>(size);
    raw = static_cast<uint64_t>(static_cast<int64_t>(raw << shift) >> shift);
  }
  return raw;
}

std::string StringOf(const filter::FilterField& f, const filter::RecordContext& c) {
  std::string_view text;
  if (f.cls == filter::FieldClass::kComm) {
    text = c.comm;
  } else if (auto bytes = filter::StringBytes(f, c.record)) {
    text = std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  }
  text = text.substr(0, std::min(text.find('\0'), kMaxStringKey - 1));
  return std::string(text);
}

}  // namespace

bool Histogram::needs_comm() const {
  return std::any_of(spec_.keys.begin(), spec_.keys.end(), [](const HistField& k) {
    return k.flag == HistFlag::kExecname ||
           (k.source == HistSource::kField && k.field.cls == filter::FieldClass::kComm);
  });
}

void Histogram::Clear() {
  entries_.clear();
  snapshot_ = {};
  hits_ = drops_ = 0;
}

Histogram::Histogram(HistSpec spec) : spec_(std::move(spec)), bindings_(spec_.refs.size()) {}

std::optional<size_t> Histogram::FindVar(std::string_view name) const {
  for (size_t i = 0; i < spec_.vars.size(); ++i) {
    if (spec_.vars[i].var == name) return i;
  }
  return std::nullopt;
}

void Histogram::BindRef(size_t ref, std::shared_ptr<Histogram> owner, size_t var) {
  ++owner->referenced_;
  bindings_[ref] = {std::move(owner), var};
}

void Histogram::Unbind() {
  for (Binding& b : bindings_) {
    if (b.owner) --b.owner->referenced_;
    b = {};
  }
}

std::optional<uint64_t> Histogram::ReadVar(const std::string& key, size_t var, bool once) {
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.set[var]) return std::nullopt;
  if (once) it->second.set[var] = false;
  return it->second.vars[var];
}

uint64_t Histogram::Evaluate(const HistField& f, const HistInput& in,
                             const std::vector<uint64_t>& refs) const {
  switch (f.source) {
    case HistSource::kField:
      return NumberOf(f.field, in.context);
    case HistSource::kTimestamp:
      return f.usecs ? (in.timestamp_ns + 500) / 1000 : in.timestamp_ns;  // ns2usecs
    case HistSource::kVarRef:
      return refs[f.ref];
    case HistSource::kConstant:
      return f.constant;
    case HistSource::kExpr:
      break;
  }
  const uint64_t a = Evaluate(f.operands[0], in, refs), b = Evaluate(f.operands[1], in, refs);
  switch (f.op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    default:
      return b == 0 ? UINT64_MAX : a / b;  // the kernel's -1 for a division by zero
  }
}

bool Histogram::Add(const HistInput& in, HistSink* sink, const HistSpec* as) {
  const HistSpec& spec = as ? *as : spec_;
  // The key's bytes: each number as a u64, each string up to a NUL.
  std::string key;
  uint64_t numbers[kMaxKeys] = {};
  for (size_t i = 0; i < spec.keys.size(); ++i) {
    const HistField& k = spec.keys[i];
    if (k.is_string()) {
      key.append(StringOf(k.field, in.context)).push_back('\0');
      continue;
    }
    uint64_t number = Evaluate(k, in, {});
    if (k.flag == HistFlag::kLog2) number = number <= 1 ? 0 : std::bit_width(number - 1);
    if (k.flag == HistFlag::kBuckets) number = number / k.buckets * k.buckets;
    key.append(reinterpret_cast<const char*>(&number), sizeof(number));
    numbers[i] = number;
  }
  // Other histograms' variables at this key: all set, or the event is skipped.
  std::vector<uint64_t> refs(spec.refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    if (spec.refs[i].own) continue;
    const Binding& b = bindings_[i];
    std::optional<uint64_t> value;
    if (b.owner) value = b.owner->ReadVar(key, b.var, spec.refs[i].read_once);
    if (!value) return false;
    refs[i] = *value;
  }
  ++hits_;
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= spec_.size) {
      ++drops_;
      return false;
    }
    Entry made;
    made.numbers.assign(numbers, numbers + spec.keys.size());
    for (const HistField& k : spec.keys)
      made.strings.push_back(k.is_string() ? StringOf(k.field, in.context) : "");
    made.sums.assign(spec.vals.size(), 0);
    made.vars.assign(spec.vars.size(), 0);
    made.set.assign(spec.vars.size(), false);
    made.comm = std::string(in.context.comm);
    it = entries_.emplace(std::move(key), std::move(made)).first;
  }
  Entry& e = it->second;
  ++e.hits;
  // Variables first, in order, so that values (and later variables) read this event's.
  for (size_t v = 0; v < spec.vars.size(); ++v) {
    e.vars[v] = Evaluate(spec.vars[v], in, refs);
    e.set[v] = true;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (spec.refs[i].own == v) refs[i] = e.vars[v];
    }
  }
  for (size_t i = 0; i < spec.vals.size(); ++i) e.sums[i] += Evaluate(spec.vals[i], in, refs);
  RunActions(spec, it->first, e, in, refs, sink);
  return true;
}

void Histogram::RunActions(const HistSpec& spec, const std::string& key, Entry& e, const HistInput& in,
                           const std::vector<uint64_t>& refs, HistSink* sink) {
  if (spec.actions.empty()) return;
  e.tracked.resize(spec.actions.size());
  for (size_t i = 0; i < spec.actions.size(); ++i) {
    const HistAction& a = spec.actions[i];
    uint64_t value = 0;
    if (a.handler != Handler::kOnMatch) {
      // onmax: above this entry's max so far; onchange: not this entry's last value (both start at 0).
      value = Evaluate(a.tracked, in, refs);
      Entry::Tracked& t = e.tracked[i];
      if (a.handler == Handler::kOnMax ? value <= t.value : value == t.value) continue;
      t.value = value;
      if (a.kind == ActionKind::kSave) {
        t.numbers.clear();
        t.strings.clear();
        for (const HistField& f : a.params) {
          t.numbers.push_back(f.is_string() ? 0 : Evaluate(f, in, refs));
          t.strings.push_back(f.is_string() ? StringOf(f.field, in.context) : std::string());
        }
      }
    }
    if (a.kind == ActionKind::kSnapshot) {
      // The instance's snapshot follows the histogram-wide max (or last value), as the kernel's.
      if (snapshot_.taken &&
          (a.handler == Handler::kOnMax ? value <= snapshot_.value : value == snapshot_.value)) {
        continue;
      }
      snapshot_ = {true, value, key, i};
      if (sink) sink->Snapshot();
    } else if (a.kind == ActionKind::kTrace && sink) {
      std::vector<uint64_t> values;
      for (const HistField& f : a.params) values.push_back(Evaluate(f, in, refs));
      sink->Trace(i, values);
    }
  }
}

// "\n\tmax:   N  field: V" per onmax/onchange action but snapshot(), as the kernel's track_data_print.
std::string Histogram::ActionsText(const Entry& e) const {
  std::string out;
  for (size_t i = 0; i < spec_.actions.size() && i < e.tracked.size(); ++i) {
    const HistAction& a = spec_.actions[i];
    if (a.handler == Handler::kOnMatch || a.kind == ActionKind::kSnapshot) continue;
    out +=
        fmt::format("\n\t{}: {:>10}", a.handler == Handler::kOnMax ? "max" : "changed", e.tracked[i].value);
    if (a.kind != ActionKind::kSave) continue;
    const Entry::Tracked& t = e.tracked[i];
    for (size_t p = 0; p < a.params.size() && p < t.numbers.size(); ++p) {
      if (a.params[p].is_string()) {
        out += fmt::format("  {}: {:<32}", a.params[p].name, t.strings[p]);
      } else {
        out += fmt::format("  {}: {:>10}", a.params[p].name, t.numbers[p]);
      }
    }
  }
  return out;
}

std::string Histogram::KeyText(const Entry& e) const {
  std::string out = "{ ";
  for (size_t i = 0; i < spec_.keys.size(); ++i) {
    const HistField& k = spec_.keys[i];
    if (i) out += ", ";
    out += k.name + ": ";
    const uint64_t n = e.numbers[i];
    if (k.is_string()) {
      out += fmt::format("{:<50}", e.strings[i]);
    } else if (k.flag == HistFlag::kHex) {
      out += fmt::format("{:x}", n);
    } else if (k.flag == HistFlag::kExecname) {
      out += fmt::format("{:<16}[{:>10}]", e.comm, n);
    } else if (k.flag == HistFlag::kLog2) {
      out += fmt::format("~ 2^{:<2}", n);
    } else if (k.flag == HistFlag::kBuckets) {
      out += fmt::format("~ {}-{}", n, n + k.buckets - 1);
    } else {
      out += fmt::format("{:>10}", n);
    }
  }
  return out + " }";
}

namespace {

constexpr unsigned kPercentError = UINT32_MAX;

// `value` in hundredths of a percent of `total`, as the kernel's __get_percentage.
unsigned Percentage(uint64_t value, uint64_t total) {
  if (total == 0) return value ? kPercentError : 0;
  if (value < UINT64_MAX / 10000) return static_cast<unsigned>(value * 10000 / total);
  total /= 10000;
  if (total == 0) return value ? kPercentError : 0;
  return static_cast<unsigned>(value / total);
}

// A 20-column bar of '#', as long as `value` is against `max`.
std::string Bar(uint64_t value, uint64_t max) {
  constexpr unsigned kWidth = 20;
  unsigned pc = Percentage(value, max);
  if (pc == kPercentError) return "[ERROR]";
  std::string bar(std::min<uint64_t>(uint64_t{pc} * kWidth / 10000, kWidth), '#');
  return bar + std::string(kWidth - bar.size(), ' ');
}

}  // namespace

std::string Histogram::ValueText(size_t i, uint64_t value, uint64_t total, uint64_t max) const {
  const HistField& v = spec_.vals[i];
  switch (v.flag) {
    case HistFlag::kPercent: {
      unsigned pc = Percentage(value, total);
      if (pc == kPercentError) return fmt::format(" {} (%):[ERROR]", v.name);
      return fmt::format(" {} (%): {:>3}.{:02}", v.name, pc / 100, pc % 100);
    }
    case HistFlag::kGraph: return fmt::format(" {}: {:>20}", v.name, Bar(value, max));
    case HistFlag::kHex: return fmt::format(" {}: {:>10x}", v.name, value);
    default: return fmt::format(" {}: {:>10}", v.name, value);
  }
}

std::string Histogram::Render(const HistSpec* as) const {
  std::vector<const Entry*> sorted;
  for (const auto& [_, e] : entries_) sorted.push_back(&e);
  auto column = [&](const Entry& e, int index, int* order) -> std::pair<uint64_t, const std::string*> {
    if (index == 0) return {e.hits, nullptr};
    size_t v = static_cast<size_t>(index) - 1;
    if (v < spec_.vals.size()) return {e.sums[v], nullptr};
    size_t k = v - spec_.vals.size();
    *order = spec_.keys[k].is_string() ? 1 : 0;
    return {e.numbers[k], &e.strings[k]};
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Entry* a, const Entry* b) {
    for (const SortKey& s : spec_.sort) {
      int is_string = 0;
      auto [an, as] = column(*a, s.index, &is_string);
      auto [bn, bs] = column(*b, s.index, &is_string);
      int cmp = is_string ? as->compare(*bs) : (an < bn ? -1 : an > bn ? 1 : 0);
      if (cmp != 0) return s.descending ? cmp > 0 : cmp < 0;
    }
    return false;
  });
  std::vector<uint64_t> totals(spec_.vals.size()), maxima(spec_.vals.size());
  for (const Entry* e : sorted) {
    for (size_t i = 0; i < spec_.vals.size(); ++i) {
      totals[i] += e->sums[i];
      maxima[i] = std::max(maxima[i], e->sums[i]);
    }
  }
  std::string out = "# event histogram\n#\n# trigger info: " + HistInfo(as ? *as : spec_, paused_) + "#\n\n";
  for (const Entry* e : sorted) {
    out += KeyText(*e) + fmt::format(" hitcount: {:>10}", e->hits);
    for (size_t i = 0; i < spec_.vals.size(); ++i) {
      // As the kernel, an expression is summed but not shown.
      if (spec_.vals[i].source != HistSource::kExpr)
        out += " " + ValueText(i, e->sums[i], totals[i], maxima[i]);
    }
    out += ActionsText(*e) + "\n";
  }
  if (auto at = entries_.find(snapshot_.key); snapshot_.taken && at != entries_.end()) {
    const HistAction& a = spec_.actions[snapshot_.action];
    out += fmt::format(
        "\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value {{ {}({}) }}: {:>10}",
        a.handler == Handler::kOnMax ? "onmax" : "onchange", FieldText(a.tracked), snapshot_.value);
    out += "\ttriggered by event with key: " + KeyText(at->second) + "\n";
  }
  out += fmt::format("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n", hits_, entries_.size(), drops_);
  return out;
}

}  // namespace udiag::trigger
