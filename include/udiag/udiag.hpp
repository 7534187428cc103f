// udiag.hpp - typed C++ events over the C ABI in udiag.h.
//
// An event is declared once with its field types and names; the type list
// gives the registration command, the static layout and the encoding, so a
// write is a typed call with no format string and no hand-made DYN_LOC:
//
//   udiag::data_file file;                                 // udiag_open()
//   udiag::event<uint32_t, udiag::rel_string> request{"http_request", {"status", "path"}};
//   request.register_on(file);                              // DIAG_IOCSREG
//   if (request.enabled()) request.write(200, "/index.html");  // udiag_writev()
//
// Field types: the fixed-width integers (s8..u64 in the kernel's names),
// char, udiag::rel_string (a __rel_loc char[] string, NUL added) and
// udiag::rel_bytes (a __rel_loc u8[] byte span). enabled() is one load and a
// branch; write() builds the record on the stack and makes no system call.
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "udiag/udiag.h"

namespace udiag {

// A __rel_loc char[] field: written from any string; the NUL is added.
struct rel_string {
  using arg_type = std::string_view;
};
// A __rel_loc u8[] field: written from a byte span.
struct rel_bytes {
  using arg_type = std::span<const uint8_t>;
};

namespace detail {

template <typename T>
struct field_traits;

#define UDIAG_INTEGER_FIELD(T, NAME)                 \
  template <>                                        \
  struct field_traits<T> {                           \
    static constexpr std::string_view type = NAME;   \
    static constexpr size_t static_size = sizeof(T); \
    static constexpr bool dynamic = false;           \
    using arg_type = T;                              \
  };
UDIAG_INTEGER_FIELD(int8_t, "s8")
UDIAG_INTEGER_FIELD(uint8_t, "u8")
UDIAG_INTEGER_FIELD(int16_t, "s16")
UDIAG_INTEGER_FIELD(uint16_t, "u16")
UDIAG_INTEGER_FIELD(int32_t, "s32")
UDIAG_INTEGER_FIELD(uint32_t, "u32")
UDIAG_INTEGER_FIELD(int64_t, "s64")
UDIAG_INTEGER_FIELD(uint64_t, "u64")
UDIAG_INTEGER_FIELD(char, "char")
#undef UDIAG_INTEGER_FIELD

template <>
struct field_traits<rel_string> {
  static constexpr std::string_view type = "__rel_loc char[]";
  static constexpr size_t static_size = 4;
  static constexpr bool dynamic = true;
  using arg_type = std::string_view;
  static size_t dynamic_size(arg_type s) { return s.size() + 1; }
};

template <>
struct field_traits<rel_bytes> {
  static constexpr std::string_view type = "__rel_loc u8[]";
  static constexpr size_t static_size = 4;
  static constexpr bool dynamic = true;
  using arg_type = std::span<const uint8_t>;
  static size_t dynamic_size(arg_type s) { return s.size(); }
};

}  // namespace detail

// An open data file (udiag_open). Closed on destruction.
class data_file {
 public:
  data_file() : fd_(udiag_open()), error_(fd_ < 0 ? errno : 0) {}
  explicit data_file(int fd) : fd_(fd) {}
  data_file(data_file&& other) noexcept : fd_(std::exchange(other.fd_, -1)), error_(other.error_) {}
  data_file& operator=(data_file&&) = delete;
  data_file(const data_file&) = delete;
  ~data_file() {
    if (fd_ >= 0) udiag_close(fd_);
  }
  int fd() const { return fd_; }
  // 0, or the errno udiag_open() failed with (ENOENT: no daemon running).
  int error() const { return error_; }

 private:
  int fd_;
  int error_ = 0;
};

template <typename... Fields>
class event {
  static constexpr size_t kStaticSize = (size_t{0} + ... + detail::field_traits<Fields>::static_size);
  static constexpr size_t kDynamicCount = (size_t{0} + ... + detail::field_traits<Fields>::dynamic);

 public:
  using names_type = std::array<std::string_view, sizeof...(Fields)>;

  // `name` must not contain spaces or ':'; one name per field.
  event(std::string_view name, const names_type& field_names, uint16_t flags = 0)
      : command_(make_command(name, field_names)), flags_(flags) {}
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() { unregister(); }

  // Registers on `file` (DIAG_IOCSREG); 0 or an errno value.
  int register_on(const data_file& file) {
    user_reg reg{};
    reg.size = sizeof(reg);
    reg.enable_bit = 31;
    reg.enable_size = sizeof(enabled_);
    reg.flags = flags_;
    reg.enable_addr = reinterpret_cast<uintptr_t>(&enabled_);
    reg.name_args = reinterpret_cast<uintptr_t>(command_.c_str());
    if (udiag_ioctl(file.fd(), DIAG_IOCSREG, &reg) < 0) return errno;
    fd_ = file.fd();
    write_index_ = reg.write_index;
    return 0;
  }

  // Stops the bit from following the event (DIAG_IOCSUNREG).
  void unregister() {
    if (fd_ < 0) return;
    user_unreg unreg{};
    unreg.size = sizeof(unreg);
    unreg.disable_bit = 31;
    unreg.disable_addr = reinterpret_cast<uintptr_t>(&enabled_);
    udiag_ioctl(fd_, DIAG_IOCSUNREG, &unreg);
    fd_ = -1;
  }

  // True while some consumer traces the event: one load and a branch.
  bool enabled() const { return __atomic_load_n(&enabled_, __ATOMIC_RELAXED) != 0; }

  // Writes one event: 0, or the errno udiag_writev gave (EBADF when nobody
  // traces it any more).
  int write(typename detail::field_traits<Fields>::arg_type... args) {
    alignas(8) uint8_t fixed[4 + kStaticSize];
    std::memcpy(fixed, &write_index_, 4);
    iovec iov[1 + 2 * kDynamicCount];
    int iovcnt = 1;
    size_t offset = 4;  // into `fixed`
    size_t dynamic_bytes = 0;
    (encode<Fields>(fixed, offset, dynamic_bytes, iov, iovcnt, args), ...);
    iov[0] = {fixed, sizeof(fixed)};
    return udiag_writev(fd_, iov, iovcnt) < 0 ? errno : 0;
  }

  const std::string& command() const { return command_; }
  uint32_t write_index() const { return write_index_; }

 private:
  static std::string make_command(std::string_view name, const names_type& field_names) {
    std::string out(name);
    std::array<std::string_view, sizeof...(Fields)> types = {detail::field_traits<Fields>::type...};
    for (size_t i = 0; i < types.size(); ++i) {
      out += i == 0 ? " " : "; ";
      out += types[i];
      out += ' ';
      out += field_names[i];
    }
    return out;
  }

  // Static fields go into `fixed`; a __rel_loc word's offset counts from the
  // end of the word to its data, which follows every static field.
  template <typename F, typename Arg>
  static void encode(uint8_t* fixed, size_t& offset, size_t& dynamic_bytes, iovec* iov, int& iovcnt,
                     const Arg& arg) {
    using T = detail::field_traits<F>;
    if constexpr (!T::dynamic) {
      typename T::arg_type value = arg;
      std::memcpy(fixed + offset, &value, sizeof(value));
    } else {
      size_t size = T::dynamic_size(arg);
      uint32_t rel = static_cast<uint32_t>((4 + kStaticSize - offset - 4) + dynamic_bytes);
      uint32_t loc = static_cast<uint32_t>(size) << 16 | (rel & 0xffff);
      std::memcpy(fixed + offset, &loc, 4);
      iov[iovcnt++] = {const_cast<void*>(static_cast<const void*>(arg.data())), arg.size()};
      if constexpr (std::is_same_v<F, rel_string>) {
        static const char kNul = '\0';
        iov[iovcnt++] = {const_cast<char*>(&kNul), 1};
      }
      dynamic_bytes += size;
    }
    offset += T::static_size;
  }

  std::string command_;
  uint16_t flags_;
  int fd_ = -1;
  uint32_t write_index_ = 0;
  uint32_t enabled_ = 0;
};

}  // namespace udiag
