#include "export/clickhouse_client.h"

#include "export/curl_library.h"

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

ClickHouseClient::ClickHouseClient(std::string url) : url_(std::move(url)), curl_lib_(Curl(&curl_error_)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  if (curl_lib_ && !(curl_ = curl_lib_->easy_init())) curl_error_ = "cannot initialise libcurl";
}

ClickHouseClient::~ClickHouseClient() {
  if (curl_) curl_lib_->easy_cleanup(curl_);
}

HttpResult ClickHouseClient::Post(const std::string& url, std::string_view body) {
  HttpResult result;
  if (!curl_) {
    result.body = curl_error_;
    return result;
  }
  const CurlLibrary& c = *curl_lib_;
  c.easy_setopt(curl_, CURLOPT_URL, url.c_str());
  c.easy_setopt(curl_, CURLOPT_POST, 1L);
  c.easy_setopt(curl_, CURLOPT_POSTFIELDS, body.data());
  c.easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  c.easy_setopt(curl_, CURLOPT_WRITEFUNCTION, AppendBody);
  c.easy_setopt(curl_, CURLOPT_WRITEDATA, &result.body);
  c.easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  c.easy_setopt(curl_, CURLOPT_TIMEOUT_MS, kTransferTimeoutMs);
  c.easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
  CURLcode code = c.easy_perform(curl_);
  if (code != CURLE_OK) {
    result.body = c.easy_strerror(code);
    return result;
  }
  result.sent = true;
  c.easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &result.status);
  return result;
}

HttpResult ClickHouseClient::Query(std::string_view sql) { return Post(url_ + "/", sql); }

HttpResult ClickHouseClient::Insert(std::string_view statement, std::string_view data) {
  if (!curl_) return HttpResult{false, 0, curl_error_};
  char* escaped = curl_lib_->easy_escape(curl_, statement.data(), static_cast<int>(statement.size()));
  if (!escaped) return HttpResult{false, 0, "cannot escape the statement"};
  std::string url = url_ + "/?query=" + escaped;
  curl_lib_->free(escaped);
  return Post(url, data);
}

}  // namespace udiag::exporter
