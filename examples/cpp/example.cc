// example_cpp - typed events with include/udiag/udiag.hpp.
//
//   udiag trace -e 'user_events:*' -- ./example_cpp
#include <udiag/udiag.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 5;
  udiag::data_file file;
  if (file.error()) {
    std::fprintf(stderr, "example_cpp: udiag_open: %s (is udiagd running?)\n", std::strerror(file.error()));
    return 1;
  }
  // Declared once: the types give the command, the layout and the encoding.
  udiag::event<uint32_t, int64_t, udiag::rel_string> request{"http_request", {"status", "latency_ns", "path"}};
  udiag::event<uint8_t, udiag::rel_bytes> packet{"packet", {"kind", "bytes"}};
  if (int err = request.register_on(file); err || (err = packet.register_on(file))) {
    std::fprintf(stderr, "example_cpp: register: %s\n", std::strerror(err));
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    std::string path = "/items/" + std::to_string(i);
    if (request.enabled()) request.write(i % 2 ? 404 : 200, 1500 + 10 * i, path);
    const uint8_t payload[] = {0xde, 0xad, static_cast<uint8_t>(i)};
    if (packet.enabled()) packet.write('A' + i, payload);
  }
  return 0;
}
