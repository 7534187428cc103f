#include "export/clickhouse_client.h"

#include <curl/curl.h>

namespace udiag::exporter {
namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// A batch of a million rows takes about a second on a slow machine; a server
// that has not answered in this long is treated as gone.
constexpr long kConnectTimeoutMs = 2000;
constexpr long kTransferTimeoutMs = 60000;

}  // namespace

ClickHouseClient::ClickHouseClient(std::string url) : url_(std::move(url)) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  curl_ = curl_easy_init();
}

ClickHouseClient::~ClickHouseClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResult ClickHouseClient::Post(const std::string& url, std::string_view body) {
  HttpResult result;
  CURL* curl = static_cast<CURL*>(curl_);
  if (!curl) {
    result.body = "cannot initialise libcurl";
    return result;
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, kTransferTimeoutMs);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) {
    result.body = curl_easy_strerror(code);
    return result;
  }
  result.sent = true;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  return result;
}

HttpResult ClickHouseClient::Query(std::string_view sql) { return Post(url_ + "/", sql); }

HttpResult ClickHouseClient::Insert(std::string_view statement, std::string_view data) {
  CURL* curl = static_cast<CURL*>(curl_);
  char* escaped = curl ? curl_easy_escape(curl, statement.data(), static_cast<int>(statement.size())) : nullptr;
  if (!escaped) return HttpResult{false, 0, "cannot escape the statement"};
  std::string url = url_ + "/?query=" + escaped;
  curl_free(escaped);
  return Post(url, data);
}

}  // namespace udiag::exporter
