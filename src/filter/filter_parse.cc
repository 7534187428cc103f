// Compile(): the kernel's two passes over a filter — a structure check of
// quotes and parentheses (calc_stack), then the expression, predicate by
// predicate (predicate_parse, parse_pred) — with their error codes, caret
// positions and errno values.
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "filter/filter.h"
#include "filter/kernel_number.h"

namespace udiag::filter {
namespace {

// Longest string value, and number text, the kernel takes.
constexpr size_t kMaxStringValue = 256;
constexpr size_t kMaxNumberText = 24;

// In the kernel's order: "<=" before "<", ">=" before ">".
constexpr std::pair<std::string_view, Op> kOps[] = {
    {"~", Op::kGlob}, {"!=", Op::kNe}, {"==", Op::kEq}, {"<=", Op::kLe},
    {"<", Op::kLt},   {">=", Op::kGe}, {">", Op::kGt},  {"&", Op::kBand},
};

bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool IsAlnum(char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

struct StructureError {
  int err;  // the kernel returns its internal codes as errno: -1, -2, -3
  ErrorCode code;
  size_t pos;
};

// calc_stack(): quotes closed, parentheses balanced, and some predicate text.
// Returns nullopt when all is well; `*empty` when there is no predicate.
std::optional<StructureError> CheckStructure(std::string_view s, bool* empty) {
  int open = 1;
  bool in_pred = false;
  int preds = 0;
  char quote = 0;
  size_t last_quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (IsSpace(c)) continue;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    switch (c) {
      case '\'':
      case '"':
        quote = c;
        last_quote = i;
        break;
      case '|':
      case '&':
        if (i + 1 >= s.size() || s[i + 1] != c) break;
        in_pred = false;
        continue;
      case '(':
        in_pred = false;
        ++open;
        continue;
      case ')':
        in_pred = false;
        if (open == 1) return StructureError{EPERM, ErrorCode::kTooManyClose, i};
        --open;
        continue;
    }
    if (!in_pred) {
      ++preds;
      in_pred = true;
    }
  }
  if (quote) return StructureError{ESRCH, ErrorCode::kMissingQuote, last_quote};
  if (open != 1) {
    // The '(' left open: walking back, the first one at the outermost
    // unmatched level (index 0 is never looked at, and is the answer then).
    int level = open;
    for (size_t i = s.size() - 1; i > 0; --i) {
      if (quote) {
        if (s[i] == quote) quote = 0;
        continue;
      }
      if (s[i] == '(') {
        if (level == open) return StructureError{ENOENT, ErrorCode::kTooManyOpen, i};
        --level;
      } else if (s[i] == ')') {
        ++level;
      } else if (s[i] == '\'' || s[i] == '"') {
        quote = s[i];
      }
    }
    return StructureError{ENOENT, ErrorCode::kTooManyOpen, 0};
  }
  *empty = preds == 0;
  return std::nullopt;
}

}  // namespace

class Parser {
 public:
  Parser(std::string_view text, const std::vector<schema::Field>& fields, Filter* out, ParseError* error)
      : s_(text), fields_(fields), out_(out), error_(error) {}

  int Run() {
    uint32_t root = ParseOr(0);
    if (root >= kEmpty) return err_ ? err_ : EINVAL;
    out_->root_ = root;
    return 0;
  }

 private:
  using Node = Filter::Node;
  enum class Token { kAnd, kOr, kClose, kEnd };
  static constexpr uint32_t kFail = UINT32_MAX;
  static constexpr uint32_t kEmpty = UINT32_MAX - 1;  // an operator with nothing after it

  char At(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
  void SkipSpace() {
    while (IsSpace(At(pos_))) ++pos_;
  }
  uint32_t Fail(int err, ErrorCode code, size_t pos) {
    err_ = err;
    *error_ = ParseError{code, static_cast<uint32_t>(pos)};
    return kFail;
  }
  uint32_t Add(Node::Kind kind, uint32_t a, uint32_t b = 0) {
    out_->nodes_.push_back(Node{kind, a, b});
    return static_cast<uint32_t>(out_->nodes_.size() - 1);
  }

  // What follows an operand: "&&", "||", ")" or the end; anything else is an
  // error, as is ")" at the top or the end inside parentheses.
  bool NextToken(int depth) {
    SkipSpace();
    char c = At(pos_);
    if (c == ')') {
      if (depth == 0) return Fail(EPERM, ErrorCode::kTooManyClose, pos_ + 1), false;
      ++pos_;
      last_ = Token::kClose;
    } else if (c == '\0') {
      if (depth > 0) return Fail(EPERM, ErrorCode::kTooManyOpen, s_.size() + 1), false;
      last_ = Token::kEnd;
    } else if ((c == '&' || c == '|') && At(pos_ + 1) == c) {
      pos_ += 2;
      last_ = c == '&' ? Token::kAnd : Token::kOr;
    } else {
      return Fail(EPERM, ErrorCode::kTooManyPreds, pos_), false;
    }
    return true;
  }

  uint32_t ParseOr(int depth) {
    uint32_t node = ParseAnd(depth);
    while (node < kEmpty && last_ == Token::kOr) {
      uint32_t right = ParseAnd(depth);
      if (right == kFail) return kFail;
      if (right == kEmpty) break;  // "a ||" at the very end: the kernel ignores the operator
      node = Add(Node::Kind::kOr, node, right);
    }
    return node;
  }

  uint32_t ParseAnd(int depth) {
    uint32_t node = ParseFactor(depth);
    if (node >= kEmpty || !NextToken(depth)) return node >= kEmpty ? node : kFail;
    while (last_ == Token::kAnd) {
      uint32_t right = ParseFactor(depth);
      if (right == kFail) return kFail;
      if (right == kEmpty) {
        last_ = Token::kEnd;
        break;
      }
      node = Add(Node::Kind::kAnd, node, right);
      if (!NextToken(depth)) return kFail;
    }
    return node;
  }

  uint32_t ParseFactor(int depth) {
    bool negate = false;
    for (;;) {
      SkipSpace();
      char c = At(pos_);
      if (c == '\0') {
        if (depth > 0) return Fail(EPERM, ErrorCode::kTooManyOpen, s_.size());
        if (out_->preds_.empty()) return Fail(EINVAL, ErrorCode::kNoFilter, s_.size());
        return kEmpty;
      }
      if (c == '!' && At(pos_ + 1) != '=' && At(pos_ + 1) != '~') {
        negate = !negate;
        ++pos_;
        continue;
      }
      uint32_t node;
      if (c == '(') {
        ++pos_;
        node = ParseOr(depth + 1);
        if (node >= kEmpty) return kFail;  // an open '(' ran to the end
      } else {
        Predicate pred;
        if (int err = ParsePredicate(&pred)) return Fail(err, error_->code, error_->pos);
        out_->needs_comm_ |= pred.field.cls == FieldClass::kComm;
        out_->preds_.push_back(std::move(pred));
        node = Add(Node::Kind::kPred, static_cast<uint32_t>(out_->preds_.size() - 1));
      }
      return negate ? Add(Node::Kind::kNot, node) : node;
    }
  }

  // parse_pred(): "field op value" at pos_. Its error positions count from
  // one past the predicate's first character, as the kernel's do.
  int ParsePredicate(Predicate* pred) {
    size_t i = pos_;
    while (IsAlnum(At(i)) || At(i) == '_') ++i;
    if (i == pos_) return SetError(EPERM, ErrorCode::kNone, 0);  // no message: "Error: (0)"
    auto field = FindField(fields_, s_.substr(pos_, i - pos_));
    if (!field) return SetError(EINVAL, ErrorCode::kFieldNotFound, i + 1);
    pred->field = *field;
    auto suffix = [&](std::string_view name) {
      if (s_.substr(i, name.size()) != name) return false;
      i += name.size();
      return true;
    };
    suffix(".ustring");  // user-space pointers: none in user events, so nothing changes
    bool function = suffix(".function");
    while (IsSpace(At(i))) ++i;
    const std::pair<std::string_view, Op>* op = nullptr;
    for (const auto& candidate : kOps) {
      if (s_.substr(i, candidate.first.size()) == candidate.first) {
        op = &candidate;
        break;
      }
    }
    if (!op) return SetError(EINVAL, ErrorCode::kInvalidOp, i + 1);
    pred->op = op->second;
    i += op->first.size();
    while (IsSpace(At(i))) ++i;
    const size_t s = i;
    int err = function                            ? ParseFunctionValue(pred, &i)
              : (At(i) == '\'' || At(i) == '"')   ? ParseStringValue(pred, &i)
              : (IsDigit(At(i)) || At(i) == '-')  ? ParseNumberValue(pred, s, &i)
                                                  : SetError(EINVAL, ErrorCode::kInvalidValue, i + 1);
    pos_ = i;
    return err;
  }

  // ".function": kernel function addresses. A user event has none to name.
  int ParseFunctionValue(Predicate* pred, size_t* i) {
    if (pred->field.size != 8) return SetError(EINVAL, ErrorCode::kIllegalFieldOp, *i + 1);
    if (pred->op != Op::kEq && pred->op != Op::kNe) return SetError(EINVAL, ErrorCode::kInvalidOp, *i + 1);
    size_t s = *i;
    if (IsDigit(At(*i))) {
      while (IsAlnum(At(*i))) ++*i;
      if (*i - s >= kMaxNumberText) return SetError(EINVAL, ErrorCode::kOperandTooLong, *i + 1);
      if (!KernelStrToU64(s_.substr(s, *i - s))) return SetError(EINVAL, ErrorCode::kInvalidValue, *i + 1);
    } else {
      while (At(*i) && !IsSpace(At(*i))) ++*i;
    }
    return SetError(EINVAL, ErrorCode::kNoFunction, *i + 1);
  }

  int ParseStringValue(Predicate* pred, size_t* i) {
    if (pred->op != Op::kEq && pred->op != Op::kNe && pred->op != Op::kGlob) {
      return SetError(EINVAL, ErrorCode::kIllegalFieldOp, *i + 1);
    }
    if (!pred->field.is_string()) return SetError(EINVAL, ErrorCode::kExpectDigit, *i + 1);
    const char quote = At(*i);
    const size_t s = *i + 1;
    for (++*i; At(*i) && At(*i) != quote; ++*i) {
    }
    if (!At(*i)) return SetError(EINVAL, ErrorCode::kMissingQuote, *i + 1);
    if (*i - s >= kMaxStringValue) return SetError(EINVAL, ErrorCode::kOperandTooLong, *i + 1);
    std::string_view value = s_.substr(s, *i - s);
    if (pred->op == Op::kGlob) {
      pred->match = ParseGlobPattern(value, &pred->negate);
    } else {
      pred->match = StringMatch{MatchKind::kFull, std::string(value)};
      pred->negate = pred->op == Op::kNe;
    }
    ++*i;
    return 0;
  }

  int ParseNumberValue(Predicate* pred, size_t s, size_t* i) {
    if (pred->field.is_string()) return SetError(EINVAL, ErrorCode::kExpectString, *i + 1);
    if (pred->op == Op::kGlob) return SetError(EINVAL, ErrorCode::kIllegalFieldOp, *i + 1);
    if (At(*i) == '-') ++*i;
    while (IsAlnum(At(*i))) ++*i;
    if (*i - s >= kMaxNumberText) return SetError(EINVAL, ErrorCode::kOperandTooLong, *i + 1);
    std::string_view text = s_.substr(s, *i - s);
    if (pred->field.is_signed) {
      auto value = KernelStrToS64(text);
      if (!value) return SetError(EINVAL, ErrorCode::kIllegalIntval, s + 1);
      pred->value = static_cast<uint64_t>(*value);
    } else {
      auto value = KernelStrToU64(text);
      if (!value) return SetError(EINVAL, ErrorCode::kIllegalIntval, s + 1);
      pred->value = *value;
    }
    pred->negate = pred->op == Op::kNe;
    return 0;
  }

  int SetError(int err, ErrorCode code, size_t pos) {
    *error_ = ParseError{code, static_cast<uint32_t>(pos)};
    return err;
  }

  std::string_view s_;
  const std::vector<schema::Field>& fields_;
  Filter* out_;
  ParseError* error_;
  size_t pos_ = 0;
  Token last_ = Token::kEnd;
  int err_ = 0;
};

int Compile(std::string_view text, const std::vector<schema::Field>& fields, Filter* out, ParseError* error) {
  *out = Filter();
  *error = ParseError{};
  text = text.substr(0, text.find('\0'));  // the kernel reads a C string
  bool empty = false;
  if (auto bad = CheckStructure(text, &empty)) {
    *error = ParseError{bad->code, static_cast<uint32_t>(bad->pos)};
    return bad->err;
  }
  if (empty) return EINVAL;  // no message: "Error: (0)"
  Filter compiled;
  int err = Parser(text, fields, &compiled, error).Run();
  if (err == 0) *out = std::move(compiled);
  return err;
}

}  // namespace udiag::filter
