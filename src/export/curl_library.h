// libcurl, loaded when `udiag export` first talks to a server rather than
// linked: the thirty-odd libraries it brings would cost every udiag command
// 5 ms to load (docs/performance-history.md), and only export uses them.
#pragma once

#include <curl/curl.h>

#include <string>

namespace udiag::exporter {

// The libcurl functions the ClickHouse client calls, with their own types.
struct CurlLibrary {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_escape) easy_escape;
  decltype(&curl_free) free;
};

// The library, loaded and initialised (curl_global_init) on the first call;
// null, with the reason in *error, when libcurl.so.4 cannot be loaded.
const CurlLibrary* Curl(std::string* error);

}  // namespace udiag::exporter
