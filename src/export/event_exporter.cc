#include "export/event_exporter.h"

#include <fmt/format.h>

#include <cerrno>
#include <random>

#include "schema/eventheader.h"

namespace udiag::exporter {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFlushInterval = std::chrono::seconds(1);
constexpr auto kRetryInterval = std::chrono::seconds(1);
constexpr int kMaxVersions = 100;
constexpr std::string_view kLostTable = "udiag_lost";

std::string Quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// "a UInt64,b String" -> "a UInt64, b String" (a column list for CREATE) or "a,b".
std::string ColumnList(const std::string& signature, bool with_types) {
  std::string out;
  size_t start = 0;
  while (start <= signature.size()) {
    size_t end = signature.find(',', start);
    if (end == std::string::npos) end = signature.size();
    std::string column = signature.substr(start, end - start);
    if (!with_types) column = column.substr(0, column.find(' '));
    if (!out.empty()) out += ", ";
    out += column;
    start = end + 1;
  }
  return out;
}

}  // namespace

EventExporter::EventExporter(ExportSettings settings, ClickHouseClient* client, BatchSpool* spool)
    : settings_(std::move(settings)), client_(client), spool_(spool), last_flush_(Clock::now()) {
  std::random_device random;
  batch_base_ = (static_cast<uint64_t>(random()) << 32);
  Table lost;
  lost.name = kLostTable;
  lost.columns = {{"count", Encoding::kUInt64}, {"reason", Encoding::kString}, {"detail", Encoding::kString}};
  lost.signature = ColumnSignature(lost.columns);
  tables_.push_back(std::move(lost));
  lost_table_ = 0;
}

bool EventExporter::CreateSchema() {
  HttpResult created = client_->Query(fmt::format("CREATE DATABASE IF NOT EXISTS {}", settings_.database));
  if (!created.ok()) {
    fmt::print(stderr, "udiag export: cannot create database {}: {}\n", settings_.database, created.body);
    return false;
  }
  if (Resolve(tables_[lost_table_].name, tables_[lost_table_].signature).empty()) return false;
  return true;
}

void EventExporter::OnEventType(const record::EventType& type) {
  EventInfo& info = events_by_id_[type.id];
  info.type = type;
  info.eventheader = schema::IsEventHeaderEvent(type.name, type.fields);
  info.table = -1;
}

void EventExporter::OnTask(const record::Task& task) { comm_by_tid_[task.tid] = task.comm; }

int EventExporter::TableFor(const EventInfo& event, const schema::DecodedEvent& decoded) {
  std::vector<Column> columns = FieldColumns(event.type.fields, event.eventheader, decoded);
  std::string name = SanitizeName(event.eventheader ? decoded.name : event.type.name);
  std::string signature = ColumnSignature(columns);
  auto [at, inserted] = table_by_key_.try_emplace(name + '\n' + signature, static_cast<int>(tables_.size()));
  if (inserted) tables_.push_back(Table{name, std::move(columns), signature, {}, 0});
  return at->second;
}

void EventExporter::OnRecord(const record::Record& record) {
  if (record.lost_before) AddLost(record.timestamp, record.cpu, record.lost_before, "ring", "");
  auto found = events_by_id_.find(record.event_id);
  if (found == events_by_id_.end()) return;
  EventInfo& event = found->second;
  auto comm = comm_by_tid_.find(record.tid);
  RowContext context{batch_base_ + next_batch_, settings_.host, settings_.boot_id, record.timestamp, record.cpu,
                     record.pid, record.tid, comm == comm_by_tid_.end() ? std::string_view() : comm->second};
  Table* table;
  if (event.eventheader) {  // its fields, and so its table, may differ per record
    schema::DecodedEvent decoded = schema::DecodeFields(event.type.name, event.type.fields, record.data);
    table = &tables_[TableFor(event, decoded)];
    AppendRow(context, table->columns, decoded.values, &table->rows);
  } else {
    if (event.table < 0) event.table = TableFor(event, {});
    table = &tables_[event.table];
    AppendRecordRow(context, table->columns, event.type.fields, record.data, &table->rows);
  }
  ++table->row_count;
  ++pending_rows_;
  ++events_;
  last_ts_ = record.timestamp;
  if (table->row_count >= kMaxBatchRows) Flush(true);
}

void EventExporter::OnLost(uint64_t count) { AddLost(last_ts_, 0, count, "trailing", ""); }

void EventExporter::AddLost(uint64_t ts_ns, uint16_t cpu, uint64_t count, std::string_view reason,
                            std::string_view detail) {
  lost_ += count;
  Table& table = tables_[lost_table_];
  std::vector<schema::TypedValue> values(3);
  values[0].kind = schema::ValueKind::kUnsigned;
  values[0].bits = count;
  values[1].kind = values[2].kind = schema::ValueKind::kString;
  values[1].text = reason;
  values[2].text = detail;
  RowContext context{batch_base_ + next_batch_, settings_.host, settings_.boot_id, ts_ns, cpu, 0, 0, {}};
  AppendRow(context, table.columns, values, &table.rows);
  ++table.row_count;
  ++pending_rows_;
}

void EventExporter::TakeBatch(Table& table, Batch* batch) {
  batch->id = batch_base_ + next_batch_;
  batch->table = table.name;
  batch->signature = table.signature;
  batch->rows = std::move(table.rows);
  batch->row_count = table.row_count;
  table.rows.clear();
  table.row_count = 0;
}

std::string EventExporter::Resolve(const std::string& name, const std::string& signature) {
  std::string key = name + '\n' + signature;
  if (auto found = resolved_.find(key); found != resolved_.end()) return found->second;
  const std::string& db = settings_.database;
  bool clustered = !settings_.cluster.empty();
  for (int version = 1; version <= kMaxVersions; ++version) {
    std::string table = version == 1 ? name : fmt::format("{}_v{}", name, version);
    std::string stored = clustered ? table + "_local" : table;
    for (int attempt = 0; attempt < 2; ++attempt) {
      HttpResult columns = client_->Query(fmt::format(
          "SELECT name, type FROM system.columns WHERE database = {} AND table = {} FORMAT TabSeparated", Quote(db),
          Quote(stored)));
      if (!columns.ok()) {
        ReportFailure(columns.body);
        return {};
      }
      std::string existing;
      for (size_t start = 0; start < columns.body.size();) {
        size_t end = columns.body.find('\n', start);
        if (end == std::string::npos) end = columns.body.size();
        std::string line = columns.body.substr(start, end - start);
        if (size_t tab = line.find('\t'); tab != std::string::npos) line[tab] = ' ';
        if (!existing.empty()) existing += ',';
        existing += line;
        start = end + 1;
      }
      if (existing == signature) {
        resolved_[key] = stored;
        return stored;
      }
      if (!existing.empty()) break;  // another format: the next version
      HttpResult created = client_->Query(
          fmt::format("CREATE TABLE IF NOT EXISTS {}.{} ({}) ENGINE = MergeTree() ORDER BY (host, ts_ns)", db, stored,
                      ColumnList(signature, true)));
      if (!created.ok()) {
        fmt::print(stderr, "udiag export: cannot create {}.{}: {}\n", db, stored, created.body);
        return {};
      }
      if (clustered) {
        HttpResult distributed = client_->Query(fmt::format(
            "CREATE TABLE IF NOT EXISTS {0}.{1} AS {0}.{2} ENGINE = Distributed({3}, {0}, {2}, cityHash64(host))", db,
            table, stored, settings_.cluster));
        if (!distributed.ok()) {
          fmt::print(stderr, "udiag export: cannot create {}.{}: {}\n", db, table, distributed.body);
          return {};
        }
      }
      // Checked again: another exporter may have created it with another format meanwhile.
    }
  }
  return {};
}

int EventExporter::Send(const Batch& batch, bool check_duplicate) {
  std::string table = Resolve(batch.table, batch.signature);
  if (table.empty()) return ECONNREFUSED;
  if (check_duplicate) {
    HttpResult count = client_->Query(fmt::format("SELECT count() FROM {}.{} WHERE batch_id = {} FORMAT TabSeparated",
                                                  settings_.database, table, batch.id));
    if (!count.ok()) {
      ReportFailure(count.body);
      return count.sent ? EIO : ECONNREFUSED;
    }
    if (std::strtoull(count.body.c_str(), nullptr, 10) > 0) return 0;  // an earlier attempt got in
  }
  HttpResult inserted = client_->Insert(fmt::format("INSERT INTO {}.{} ({}) FORMAT RowBinary", settings_.database,
                                                    table, ColumnList(batch.signature, false)),
                                        batch.rows);
  if (inserted.ok()) {
    rows_sent_ += batch.row_count;
    if (failing_) fmt::print(stderr, "udiag export: ClickHouse takes batches again\n");
    failing_ = false;
    return 0;
  }
  ReportFailure(inserted.body);
  return inserted.sent ? EIO : ECONNREFUSED;
}

void EventExporter::ReportFailure(std::string_view why) {
  if (failing_) return;
  failing_ = true;
  fmt::print(stderr, "udiag export: ClickHouse does not take batches ({}); spooling them\n", why.substr(0, why.find('\n')));
}

bool EventExporter::SendSpooled() {
  while (auto path = spool_->Oldest()) {
    auto batch = BatchSpool::Load(*path);
    if (batch && Send(*batch, /*check_duplicate=*/true)) {
      last_failure_ = Clock::now();
      return false;
    }
    if (!batch) fmt::print(stderr, "udiag export: dropping a damaged spool file {}\n", *path);
    spool_->Remove(*path);
  }
  return true;
}

void EventExporter::Store(Batch batch) {
  if (int err = spool_->Put(batch)) {
    if (batch.table == kLostTable) return;  // kept in memory: the next flush tries again
    ++spool_dropped_;
    AddLost(last_ts_, 0, batch.row_count, err == ENOSPC ? "spool_full" : "spool_error", batch.table);
  }
}

void EventExporter::Flush(bool force) {
  auto now = Clock::now();
  if (!force && pending_rows_ < kMaxBatchRows && now - last_flush_ < kFlushInterval) return;
  last_flush_ = now;
  bool retry_due = now - last_failure_ >= kRetryInterval || force;
  bool clear = retry_due ? SendSpooled() : spool_->Oldest() == std::nullopt;
  // Event tables first: the losses they cause go out with udiag_lost last.
  for (size_t k = 1; k <= tables_.size(); ++k) {
    Table& table = tables_[k % tables_.size()];
    if (!table.row_count) continue;
    Batch batch;
    TakeBatch(table, &batch);
    ++next_batch_;
    if (clear && !Send(batch, /*check_duplicate=*/false)) continue;
    if (clear) last_failure_ = now;
    clear = false;  // keep batches in order behind the spooled ones
    if (batch.table == kLostTable && spool_->Put(batch)) {
      Table& lost = tables_[lost_table_];  // back in memory, in front of newer losses
      batch.rows += lost.rows;
      lost.rows = std::move(batch.rows);
      lost.row_count += batch.row_count;
      continue;
    }
    if (batch.table != kLostTable) Store(std::move(batch));
  }
  pending_rows_ = 0;
  for (const Table& table : tables_) pending_rows_ += table.row_count;
}

}  // namespace udiag::exporter
