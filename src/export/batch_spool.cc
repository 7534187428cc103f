#include "export/batch_spool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace udiag::exporter {
namespace fs = std::filesystem;

namespace {
constexpr std::string_view kSuffix = ".batch";
}

BatchSpool::BatchSpool(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  // Names sort by when they were spooled, across runs too.
  for (const std::string& path : Files()) {
    next_ = std::max<uint64_t>(next_, std::strtoull(fs::path(path).filename().c_str(), nullptr, 10) + 1);
  }
}

std::vector<std::string> BatchSpool::Files() const {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename();
    if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t BatchSpool::bytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (const std::string& path : Files()) total += fs::file_size(path, ec);
  return total;
}

size_t BatchSpool::count() const { return Files().size(); }

int BatchSpool::Put(const Batch& batch) {
  std::string header = fmt::format("{}\n{}\n{}\n{}\n", batch.id, batch.row_count, batch.table, batch.signature);
  if (bytes() + header.size() + batch.rows.size() > max_bytes_) return ENOSPC;
  std::string name = fmt::format("{}/{:020}{}", dir_, next_++, kSuffix);
  std::string temporary = name + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << header;
    out.write(batch.rows.data(), static_cast<std::streamsize>(batch.rows.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(temporary, ec);
      return EIO;
    }
  }
  std::error_code ec;
  fs::rename(temporary, name, ec);
  return ec ? ec.value() : 0;
}

std::optional<std::string> BatchSpool::Oldest() const {
  auto files = Files();
  if (files.empty()) return std::nullopt;
  return files.front();
}

std::optional<Batch> BatchSpool::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Batch batch;
  std::string id, rows;
  if (!std::getline(in, id) || !std::getline(in, rows) || !std::getline(in, batch.table) ||
      !std::getline(in, batch.signature)) {
    return std::nullopt;
  }
  batch.id = std::strtoull(id.c_str(), nullptr, 10);
  batch.row_count = std::strtoull(rows.c_str(), nullptr, 10);
  std::ostringstream data;
  data << in.rdbuf();
  batch.rows = std::move(data).str();
  return batch;
}

void BatchSpool::Remove(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace udiag::exporter
