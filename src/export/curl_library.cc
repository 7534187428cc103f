#include "export/curl_library.h"

#include <dlfcn.h>

namespace udiag::exporter {
namespace {

struct Loaded {
  CurlLibrary library{};
  std::string error;  // empty: loaded
};

template <typename Function>
bool Find(void* handle, const char* name, Function* out, std::string* error) {
  *out = reinterpret_cast<Function>(::dlsym(handle, name));
  if (*out == nullptr && error->empty()) *error = std::string("libcurl.so.4 has no ") + name;
  return *out != nullptr;
}

Loaded Load() {
  Loaded loaded;
  // Never closed: libcurl keeps global state for the process's lifetime.
  void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    loaded.error = std::string("cannot load libcurl (install libcurl4): ") + (why ? why : "dlopen failed");
    return loaded;
  }
  CurlLibrary& c = loaded.library;
  std::string& e = loaded.error;
  const bool all = Find(handle, "curl_global_init", &c.global_init, &e) &
                   Find(handle, "curl_easy_init", &c.easy_init, &e) &
                   Find(handle, "curl_easy_cleanup", &c.easy_cleanup, &e) &
                   Find(handle, "curl_easy_setopt", &c.easy_setopt, &e) &
                   Find(handle, "curl_easy_perform", &c.easy_perform, &e) &
                   Find(handle, "curl_easy_strerror", &c.easy_strerror, &e) &
                   Find(handle, "curl_easy_getinfo", &c.easy_getinfo, &e) &
                   Find(handle, "curl_easy_escape", &c.easy_escape, &e) & Find(handle, "curl_free", &c.free, &e);
  if (all && c.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) e = "curl_global_init failed";
  return loaded;
}

}  // namespace

const CurlLibrary* Curl(std::string* error) {
  static const Loaded loaded = Load();  // once, thread-safe
  if (!loaded.error.empty()) {
    *error = loaded.error;
    return nullptr;
  }
  return &loaded.library;
}

}  // namespace udiag::exporter
