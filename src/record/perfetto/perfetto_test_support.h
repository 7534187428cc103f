// What the Perfetto tests share: scratch files and protoc, the oracle that
// decodes our files against the upstream protos (protos/). The test target
// defines UDIAG_PERFETTO_DIR and UDIAG_PROTOC.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace udiag::record::testing {

inline const std::string kProtoDir = UDIAG_PERFETTO_DIR;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string ScratchPath(const std::string& name) {
  return ::testing::TempDir() + "/perfetto_" + std::to_string(getpid()) + "_" + name;
}

// Runs protoc --decode=perfetto.protos.Trace on `trace`; returns its exit
// status and puts stdout+stderr in `text`.
inline int DecodeWithProtoc(const std::string& trace, std::string* text) {
  std::string out = trace + ".txt";
  std::string command = std::string(UDIAG_PROTOC) + " -I " + kProtoDir +
                        " --decode=perfetto.protos.Trace protos/perfetto/trace/trace.proto < " + trace +
                        " > " + out + " 2>&1";
  int status = std::system(command.c_str());
  *text = ReadFile(out);
  unlink(out.c_str());
  return status;
}

}  // namespace udiag::record::testing
