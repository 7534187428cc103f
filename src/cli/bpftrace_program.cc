#include "cli/bpftrace_program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "schema/event_description.h"

namespace udiag::cli {
namespace {

using schema::Field;
using schema::FieldKind;

// Just enough of bpftrace's lexical structure to find blocks, predicates and
// `args` without looking inside strings and comments.
enum class Tok { kSpace, kComment, kString, kIdent, kVar, kNumber, kPunct };

struct Token {
  Tok kind;
  std::string_view text;
};

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool Space(char c) { return std::isspace(static_cast<unsigned char>(c)); }

// "/*" and "//" inside an attach point ("uprobe:/lib/*.so") are not comments.
bool CommentMayStart(std::string_view s, size_t i) {
  if (i == 0) return true;
  char before = s[i - 1];
  return !IdentChar(before) && before != ':' && before != '/' && before != '.' && before != '-';
}

bool AtLineStart(std::string_view s, size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) --i;
  return i == 0 || s[i - 1] == '\n';
}

size_t EndOr(size_t pos, std::string_view s) { return pos == std::string_view::npos ? s.size() : pos; }

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char c = s[i];
    Tok kind = Tok::kPunct;
    if (Space(c)) {
      while (i < s.size() && Space(s[i])) ++i;
      kind = Tok::kSpace;
    } else if (c == '/' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '*') && CommentMayStart(s, i)) {
      size_t end = s[i + 1] == '/' ? s.find('\n', i) : s.find("*/", i + 2);
      i = s[i + 1] == '/' ? EndOr(end, s) : (end == std::string_view::npos ? s.size() : end + 2);
      kind = Tok::kComment;
    } else if (c == '#' && AtLineStart(s, i)) {  // #include, #define: kept as they are
      i = EndOr(s.find('\n', i), s);
      kind = Tok::kComment;
    } else if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\') ++i;
      }
      i = std::min(i + 1, s.size());
      kind = Tok::kString;
    } else if (IdentChar(c)) {
      while (i < s.size() && IdentChar(s[i])) ++i;
      kind = std::isdigit(static_cast<unsigned char>(c)) ? Tok::kNumber : Tok::kIdent;
    } else if (c == '$' || c == '@') {
      for (++i; i < s.size() && IdentChar(s[i]);) ++i;
      kind = Tok::kVar;
    } else {
      i += (c == '-' && i + 1 < s.size() && s[i + 1] == '>') ? 2 : 1;
    }
    tokens.push_back({kind, s.substr(start, i - start)});
  }
  return tokens;
}

bool Trivia(const Token& t) { return t.kind == Tok::kSpace || t.kind == Tok::kComment; }
bool Is(const std::vector<Token>& tokens, size_t i, std::string_view text) {
  return i < tokens.size() && tokens[i].kind != Tok::kString && tokens[i].text == text;
}

// The next token after `i` that is not blank or a comment (tokens.size() if none).
size_t NextSignificant(const std::vector<Token>& tokens, size_t i) {
  for (++i; i < tokens.size() && Trivia(tokens[i]);) ++i;
  return i;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && Space(s.front())) s.remove_prefix(1);
  while (!s.empty() && Space(s.back())) s.remove_suffix(1);
  return s;
}

constexpr std::string_view kSystems[] = {"user_events_multi", "user_events"};
constexpr std::string_view kTracepointPrefixes[] = {"tracepoint:", "t:"};

// "user_events:NAME", "tracepoint:user_events:NAME", "t:user_events_multi:NAME"...:
// the length of the part before NAME and the system, or 0.
size_t UserEventsPrefix(std::string_view attach_point, std::string_view* system) {
  size_t skip = 0;
  for (std::string_view prefix : kTracepointPrefixes) {
    if (attach_point.starts_with(prefix)) skip = prefix.size();
  }
  for (std::string_view candidate : kSystems) {
    std::string_view rest = attach_point.substr(skip);
    if (rest.starts_with(candidate) && rest.size() > candidate.size() && rest[candidate.size()] == ':') {
      *system = candidate;
      return skip + candidate.size() + 1;
    }
  }
  return 0;
}

bool IsGlob(std::string_view name) { return name.find_first_of("*?[") != std::string_view::npos; }

bool StartsWithUserEvents(std::string_view attach_point) {
  std::string_view system;
  return UserEventsPrefix(Trim(attach_point), &system) != 0;
}

struct ProbePoint {
  std::string system;
  std::string name;
};

// What stands before a block's '{': its attach points and predicate.
struct Header {
  std::vector<ProbePoint> points;  // empty: not a user_events probe
  std::string_view predicate;      // without the slashes; empty when none
};

std::string ParseHeader(std::string_view core, Header* header) {
  std::string_view rest = Trim(core);
  if (!StartsWithUserEvents(rest)) {
    // Another kind of probe (or a struct definition): left to bpftrace,
    // unless a user_events probe hides later in its list.
    size_t comma = 0;
    while ((comma = rest.find(',', comma)) != std::string_view::npos) {
      if (StartsWithUserEvents(rest.substr(++comma))) {
        return fmt::format("`{}`: a probe list cannot mix user_events with other probes", rest);
      }
    }
    return {};
  }
  for (;;) {
    std::string_view system;
    size_t prefix = UserEventsPrefix(rest, &system);
    if (prefix == 0) return fmt::format("`{}`: a probe list cannot mix user_events with other probes", Trim(core));
    size_t end = prefix;
    while (end < rest.size() && !Space(rest[end]) && rest[end] != ',' && rest[end] != '/') ++end;
    std::string_view name = rest.substr(prefix, end - prefix);
    if (name.empty()) return fmt::format("`{}`: no event name", Trim(core));
    header->points.push_back({std::string(system), std::string(name)});
    rest = Trim(rest.substr(end));
    if (!rest.starts_with(',')) break;
    rest = Trim(rest.substr(1));
  }
  if (rest.empty()) return {};
  if (rest.size() >= 2 && rest.front() == '/' && rest.back() == '/') {
    header->predicate = rest.substr(1, rest.size() - 2);
    return {};
  }
  return fmt::format("`{}`: expected `,`, a predicate /.../ or `{{` after the probe", Trim(core));
}

std::string Payload(uint32_t record_offset) {
  return fmt::format("arg1 + {}", record_offset - schema::kCommonHeaderSize);
}

// The address of a __data_loc/__rel_loc field's data: the loc word holds the
// offset in its low 16 bits (from the record start, or from the end of the
// word for __rel_loc) and the length in the high 16.
std::string LocData(const Field& field) {
  std::string loc = fmt::format("(*(uint32*)({}))", Payload(field.offset));
  if (field.kind == FieldKind::kRelLoc) return fmt::format("({} + ({} & 0xffff))", Payload(field.offset + 4), loc);
  return fmt::format("(arg1 + ({} & 0xffff) - {})", loc, schema::kCommonHeaderSize);
}

// Where a field that is not a number lies.
std::string Address(const Field& field) {
  if (field.kind == FieldKind::kDataLoc || field.kind == FieldKind::kRelLoc) return LocData(field);
  return fmt::format("({})", Payload(field.offset));
}

bool IsNumber(const Field& field) { return field.kind == FieldKind::kInteger; }

// What `args->field` stands for: a number, a string (char arrays, which
// bpftrace makes strings of, and loc strings, NUL-terminated as udiagd
// checked), or else the address of the bytes.
std::string Value(const Field& field, std::string* error) {
  if (IsNumber(field)) {
    if (field.size != 1 && field.size != 2 && field.size != 4 && field.size != 8) {
      *error = fmt::format("field `{}` is {} bytes: not an integer bpftrace reads", field.name, field.size);
      return {};
    }
    return fmt::format("(*({}int{}*)({}))", field.is_signed ? "" : "u", field.size * 8, Payload(field.offset));
  }
  if (!field.is_string) return Address(field);
  if (field.kind == FieldKind::kStaticArray) return fmt::format("str({}, {})", Payload(field.offset), field.size);
  return fmt::format("str({})", LocData(field));
}

// The common fields, as the record header would give them: common_pid is
// the thread, as in ftrace.
std::optional<std::string> CommonValue(std::string_view name) {
  if (name == "common_type") return "arg0";
  if (name == "common_pid") return "arg4";
  if (name == "common_flags" || name == "common_preempt_count") return "0";
  return std::nullopt;
}

std::string FieldNames(const record::EventType& event) {
  std::string names;
  for (const Field& field : event.fields) names += (names.empty() ? "" : ", ") + field.name;
  return names.empty() ? "none" : names;
}

// Rewrites a predicate or block body for `event`.
class BodyRewriter {
 public:
  BodyRewriter(const record::EventType& event, std::string_view probe) : event_(event), probe_(probe) {}

  bool Rewrite(std::string_view text, std::string* out, std::string* error) {
    tokens_ = Lex(text);
    std::string_view previous;  // the last significant token
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const Token& token = tokens_[i];
      bool member = previous == "->" || previous == ".";
      if (token.kind != Tok::kIdent || member) {
        *out += token.text;
      } else if (token.text == "str" && StrOfField(&i, out)) {
      } else if (token.text == "args") {
        if (!Arg(&i, out, error)) return false;
      } else if (token.text == "pid" || token.text == "tid") {
        *out += token.text == "pid" ? "arg3" : "arg4";  // the producer's, not udiagd's
      } else if (token.text == "probe") {
        // What bpftrace gives for the tracepoint; a string, as the probe
        // type cannot name another probe than the USDT one.
        *out += fmt::format("\"tracepoint:{}\"", probe_);
      } else {
        *out += token.text;
      }
      if (!Trivia(tokens_[i])) previous = tokens_[i].text;
    }
    return true;
  }

 private:
  // `args->NAME` at *i: its index after NAME, and the field (null for a
  // common one) or an error.
  bool FieldAt(size_t* i, const Field** field, std::string_view* name, std::string* error) {
    size_t arrow = NextSignificant(tokens_, *i);
    size_t ident = NextSignificant(tokens_, arrow);
    if (!(Is(tokens_, arrow, "->") || Is(tokens_, arrow, ".")) || ident >= tokens_.size() ||
        tokens_[ident].kind != Tok::kIdent) {
      *error = fmt::format("{}: `args` must be followed by ->FIELD (fields: {})", probe_, FieldNames(event_));
      return false;
    }
    *name = tokens_[ident].text;
    *i = ident;
    auto found = std::find_if(event_.fields.begin(), event_.fields.end(), [&](const Field& f) { return f.name == *name; });
    *field = found == event_.fields.end() ? nullptr : &*found;
    if (*field || CommonValue(*name)) return true;
    *error = fmt::format("{} has no field `{}` (fields: {})", probe_, *name, FieldNames(event_));
    return false;
  }

  bool Arg(size_t* i, std::string* out, std::string* error) {
    const Field* field = nullptr;
    std::string_view name;
    if (!FieldAt(i, &field, &name, error)) return false;
    if (!field) {
      *out += *CommonValue(name);
      return true;
    }
    std::string value = Value(*field, error);
    *out += value;
    return error->empty();
  }

  // `str(args->NAME)` or `str(args->NAME, LEN` of a field that is not a
  // number: str() of its address (bounded by the size of a char array).
  // False, consuming nothing, for anything else.
  bool StrOfField(size_t* i, std::string* out) {
    size_t open = NextSignificant(tokens_, *i);
    size_t args = NextSignificant(tokens_, open);
    if (!Is(tokens_, open, "(") || !Is(tokens_, args, "args") || tokens_[args].kind != Tok::kIdent) return false;
    size_t at = args;
    const Field* field = nullptr;
    std::string_view name;
    std::string ignored;
    if (!FieldAt(&at, &field, &name, &ignored) || !field || IsNumber(*field)) return false;
    size_t after = NextSignificant(tokens_, at);
    if (Is(tokens_, after, ",")) {
      *out += fmt::format("str({},", Address(*field));
    } else if (Is(tokens_, after, ")")) {
      *out += field->kind == FieldKind::kStaticArray ? fmt::format("str({}, {})", Address(*field), field->size)
                                                     : fmt::format("str({})", Address(*field));
    } else {
      return false;
    }
    *i = after;
    return true;
  }

  const record::EventType& event_;
  std::string_view probe_;
  std::vector<Token> tokens_;
};

// Index of the '}' closing the '{' at `open`, or tokens.size().
size_t MatchingBrace(const std::vector<Token>& tokens, size_t open) {
  int depth = 0;
  for (size_t i = open; i < tokens.size(); ++i) {
    if (tokens[i].kind != Tok::kPunct) continue;
    if (tokens[i].text == "{") ++depth;
    if (tokens[i].text == "}" && --depth == 0) return i;
  }
  return tokens.size();
}

class Translator {
 public:
  Translator(std::string_view source, std::string_view usdt, const EventLookup& lookup, const EventGlob& glob)
      : source_(source), usdt_(usdt), lookup_(lookup), glob_(glob) {}

  BpftraceTranslation Run() {
    std::vector<Token> tokens = Lex(source_);
    size_t i = 0;
    while (i < tokens.size()) {
      size_t open = i;
      while (open < tokens.size() && !(tokens[open].kind == Tok::kPunct && tokens[open].text == "{")) ++open;
      size_t close = open < tokens.size() ? MatchingBrace(tokens, open) : tokens.size();
      if (close == tokens.size()) {  // trailing text, or an unclosed block: bpftrace will say
        result_.program += source_.substr(Offset(tokens[i]));
        break;
      }
      // Blanks, comments, #include lines and the ';' after a struct come
      // before the attach points.
      size_t core = i;
      while (core < open && (Trivia(tokens[core]) || tokens[core].text == ";")) ++core;
      std::string_view lead = Span(tokens[i], tokens[core]);
      std::string_view core_text = Span(tokens[core], tokens[open]);
      std::string_view body = Span(tokens[open + 1], tokens[close]);
      result_.program += lead;
      if (!Block(core_text, body, Span(tokens[core], tokens[close]).size() + 1)) return Failed();
      i = close + 1;
    }
    return std::move(result_);
  }

 private:
  size_t Offset(const Token& t) const { return static_cast<size_t>(t.text.data() - source_.data()); }
  std::string_view Span(const Token& from, const Token& to) const {
    return source_.substr(Offset(from), Offset(to) - Offset(from));
  }

  BpftraceTranslation Failed() {
    result_.program.clear();
    result_.events.clear();
    return std::move(result_);
  }

  // One `header { body }`; `length` covers it all, for copying it unchanged.
  // Each event gets its block; the errors of all of them are told, as
  // bpftrace tells those of each tracepoint a glob matches.
  bool Block(std::string_view core, std::string_view body, size_t length) {
    Header header;
    result_.error = ParseHeader(core, &header);
    if (!result_.error.empty()) return false;
    if (header.points.empty()) {
      result_.program += source_.substr(static_cast<size_t>(core.data() - source_.data()), length);
      return true;
    }
    std::vector<ProbePoint> points;
    if (!Expand(header.points, &points)) return false;
    std::vector<std::string> errors;
    for (size_t k = 0; k < points.size(); ++k) {
      std::string error;
      const record::EventType* event = Lookup(points[k], &error);
      std::string predicate, block;
      bool ok = event != nullptr;
      if (ok) {
        std::string probe = fmt::format("{}:{}", event->system, event->name);
        BodyRewriter rewriter(*event, probe);
        ok = (header.predicate.empty() || rewriter.Rewrite(header.predicate, &predicate, &error)) &&
             rewriter.Rewrite(body, &block, &error);
      }
      if (!ok) {
        errors.push_back(std::move(error));
        continue;
      }
      if (k > 0) result_.program += '\n';
      result_.program += fmt::format("{} /arg0 == {}{}/ {{{}}}", usdt_, event->id,
                                     predicate.empty() ? "" : " && (" + predicate + ")", block);
    }
    result_.error = fmt::format("{}", fmt::join(errors, "\n"));
    return errors.empty();
  }

  // The header's points, each glob replaced by the events it matches in
  // name order (bpftrace's order for a tracepoint glob).
  bool Expand(const std::vector<ProbePoint>& written, std::vector<ProbePoint>* points) {
    for (const ProbePoint& point : written) {
      if (!IsGlob(point.name)) {
        points->push_back(point);
        continue;
      }
      std::optional<std::vector<std::string>> names = glob_(point.system, point.name, &result_.error);
      if (!names) {
        if (result_.error.empty()) result_.error = fmt::format("cannot list the events for {}:{}", point.system, point.name);
        return false;
      }
      if (names->empty()) {
        result_.error = fmt::format("tracepoints not found: {}:{} (udiagd's events: udiag cat available_events)",
                                    point.system, point.name);
        return false;
      }
      std::sort(names->begin(), names->end());
      for (std::string& name : *names) points->push_back({point.system, std::move(name)});
    }
    return true;
  }

  const record::EventType* Lookup(const ProbePoint& point, std::string* error) {
    std::string key = point.system + "/" + point.name;
    auto it = events_.find(key);
    if (it != events_.end()) return &it->second;
    std::optional<record::EventType> event = lookup_(point.system, point.name, error);
    if (!event) {
      if (error->empty()) *error = fmt::format("no event {}:{}", point.system, point.name);
      return nullptr;
    }
    event->system = point.system;
    event->name = point.name;
    result_.events.push_back(key);
    return &events_.emplace(key, std::move(*event)).first->second;
  }

  std::string_view source_;
  std::string_view usdt_;
  const EventLookup& lookup_;
  const EventGlob& glob_;
  std::map<std::string, record::EventType> events_;  // by "system/name"
  BpftraceTranslation result_;
};

}  // namespace

BpftraceTranslation TranslateBpftrace(std::string_view source, std::string_view usdt, const EventLookup& lookup,
                                      const EventGlob& glob) {
  return Translator(source, usdt, lookup, glob).Run();
}

}  // namespace udiag::cli
