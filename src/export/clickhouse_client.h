// A ClickHouse server over its HTTP interface (port 8123), through libcurl
// (loaded on first use, curl_library.h): statements and `INSERT ... FORMAT
// RowBinary` bodies, one kept-alive connection.
#pragma once

#include <string>
#include <string_view>

namespace udiag::exporter {

struct CurlLibrary;

struct HttpResult {
  bool sent = false;  // the request reached the server (false: connect/transfer failed)
  long status = 0;    // HTTP status when sent
  std::string body;   // the response, or curl's error text
  bool ok() const { return sent && status == 200; }
};

class ClickHouseClient {
 public:
  // `url` is e.g. http://host:8123 (user:password@ allowed). Without
  // libcurl every request fails, its body saying why.
  explicit ClickHouseClient(std::string url);
  ~ClickHouseClient();
  ClickHouseClient(const ClickHouseClient&) = delete;
  ClickHouseClient& operator=(const ClickHouseClient&) = delete;

  // Runs `sql` (the POST body); the response is TabSeparated text.
  HttpResult Query(std::string_view sql);
  // Runs `statement` (in the URL) with `data` as its input, e.g.
  // "INSERT INTO db.t (a,b) FORMAT RowBinary" and the rows.
  HttpResult Insert(std::string_view statement, std::string_view data);

 private:
  HttpResult Post(const std::string& url, std::string_view body);

  std::string url_;
  std::string curl_error_;  // why there is no curl_ handle
  const CurlLibrary* curl_lib_;  // null without libcurl
  void* curl_ = nullptr;  // CURL*
};

}  // namespace udiag::exporter
