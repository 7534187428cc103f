// Where `udiag export` puts the record stream (or a trace file's records):
// typed RowBinary rows, one table per event and format, sent to ClickHouse in
// batches. Batches ClickHouse does not take go to a BatchSpool and are sent
// when it is back; what the spool cannot hold is counted in udiag_lost.
//
// Delivery: every row carries its batch's id. A batch is one INSERT of at
// most kMaxBatchRows rows, which ClickHouse writes as one part (all or
// nothing); before a spooled batch is sent again, a query for its id tells
// whether an earlier attempt got in. So each batch lands exactly once, as
// long as its spool file survives; a crash of the exporter loses only the
// batches still in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "consumer/record_stream.h"
#include "export/batch_spool.h"
#include "export/clickhouse_client.h"
#include "export/table_schema.h"

namespace udiag::exporter {

inline constexpr uint64_t kMaxBatchRows = 100000;  // well under ClickHouse's max_insert_block_size

struct ExportSettings {
  std::string database = "udiag";
  std::string host;
  std::string boot_id;
  std::string cluster;  // non-empty: <table>_local MergeTree + <table> Distributed over it
};

class EventExporter : public consumer::RecordSink {
 public:
  EventExporter(ExportSettings settings, ClickHouseClient* client, BatchSpool* spool);

  void OnEventType(const record::EventType& type) override;
  void OnTask(const record::Task& task) override;
  void OnRecord(const record::Record& record) override;
  void OnLost(uint64_t count) override;

  // Creates the database and udiag_lost; false (said on stderr) when the
  // server refuses.
  bool CreateSchema();
  // Sends what is due: everything with `force`, else once a batch is full or
  // a second has passed. Spooled batches go first.
  void Flush(bool force);
  // Tries to send every spooled batch; false when some are left.
  bool SendSpooled();

  uint64_t events() const { return events_; }
  uint64_t rows_sent() const { return rows_sent_; }
  uint64_t lost() const { return lost_; }
  uint64_t spool_dropped() const { return spool_dropped_; }

 private:
  struct Table {
    std::string name;  // before versioning
    std::vector<Column> columns;
    std::string signature;
    std::string rows;
    uint64_t row_count = 0;
  };
  struct EventInfo {
    record::EventType type;
    bool eventheader = false;
    int table = -1;  // plain events: their one table
  };

  int TableFor(const EventInfo& event, const schema::DecodedEvent& decoded);
  void AddLost(uint64_t ts_ns, uint16_t cpu, uint64_t count, std::string_view reason, std::string_view detail);
  void TakeBatch(Table& table, Batch* batch);
  // Sends one batch; 0 when ClickHouse took it, else an errno-like code
  // (ECONNREFUSED unreachable, EIO refused).
  int Send(const Batch& batch, bool check_duplicate);
  // The table a signature lives in on the server (created when missing);
  // empty when the server cannot be asked.
  std::string Resolve(const std::string& name, const std::string& signature);
  void Store(Batch batch);
  // Says on stderr, once per outage, why batches go to the spool.
  void ReportFailure(std::string_view why);

  ExportSettings settings_;
  ClickHouseClient* client_;
  BatchSpool* spool_;
  std::unordered_map<uint32_t, EventInfo> events_by_id_;
  std::unordered_map<uint32_t, std::string> comm_by_tid_;
  std::vector<Table> tables_;
  std::map<std::string, int> table_by_key_;              // name + signature -> tables_
  std::map<std::string, std::string> resolved_;          // name + signature -> server table
  int lost_table_ = -1;
  uint64_t batch_base_;
  uint64_t next_batch_ = 0;
  std::chrono::steady_clock::time_point last_flush_, last_failure_{};
  uint64_t pending_rows_ = 0;
  uint64_t events_ = 0, rows_sent_ = 0, lost_ = 0, spool_dropped_ = 0;
  uint64_t last_ts_ = 0;
  bool failing_ = false;
};

}  // namespace udiag::exporter
