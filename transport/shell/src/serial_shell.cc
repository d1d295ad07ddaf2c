#include "cairn/shell/serial_shell.h"

#include <optional>
#include <utility>

namespace cairn {

namespace {

// The renderer ends lines with "\n"; a raw tty needs "\r\n".
std::string ToTerminalLineEndings(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    if (c == '\n') out.push_back('\r');
    out.push_back(c);
  }
  return out;
}

}  // namespace

SerialShell::SerialShell(Env* env, std::unique_ptr<SerialPort> port, const CommandRegistry* registry,
                         SerialShellOptions options)
    : env_(env), port_(std::move(port)), registry_(registry), options_(std::move(options)) {}

SerialShell::~SerialShell() { Stop(); }

void SerialShell::Start() {
  MutexLock lock(&thread_mutex_);
  thread_ = env_->StartThread([this] { Serve(); });
}

void SerialShell::Stop() {
  stop_requested_.store(true, std::memory_order_release);
  MutexLock lock(&thread_mutex_);
  if (thread_.joinable()) thread_.join();
}

Status SerialShell::session_status() const {
  MutexLock lock(&status_mutex_);
  return session_status_;
}

void SerialShell::Serve() {
  Status status = ServeUntilStopped();
  {
    MutexLock lock(&status_mutex_);
    session_status_ = std::move(status);
  }
  ended_.store(true, std::memory_order_release);
}

Status SerialShell::ServeUntilStopped() {
  std::string greeting = "\r\n";
  if (!options_.banner.empty()) greeting += ToTerminalLineEndings(options_.banner) + "\r\n";
  greeting += options_.prompt;
  CAIRN_RETURN_IF_ERROR(Output(greeting));

  LineEditor editor(options_.max_line_bytes);
  char buffer[256];
  std::string echo;
  while (!stop_requested_.load(std::memory_order_acquire)) {
    CAIRN_ASSIGN_OR_RETURN(const size_t count, port_->Read(buffer, sizeof(buffer), options_.read_timeout_ms));
    for (size_t i = 0; i < count; ++i) {
      std::optional<LineEvent> event = editor.Feed(buffer[i], &echo);
      if (!event) continue;
      CAIRN_RETURN_IF_ERROR(Output(echo));
      echo.clear();
      CAIRN_RETURN_IF_ERROR(HandleLine(*event));
    }
    if (!echo.empty()) {
      CAIRN_RETURN_IF_ERROR(Output(echo));
      echo.clear();
    }
  }
  return Status::Ok();
}

Status SerialShell::HandleLine(const LineEvent& event) {
  std::string output;
  switch (event.kind) {
    case LineEvent::Kind::kLine:
      output = registry_->Execute(event.line, options_.render);
      break;
    case LineEvent::Kind::kOverlong:
      output = "error: line too long (more than " + std::to_string(options_.max_line_bytes) +
               " bytes); nothing was run\n";
      break;
    case LineEvent::Kind::kCancelled:
      break;
  }
  return Output(ToTerminalLineEndings(output) + options_.prompt);
}

Status SerialShell::Output(std::string_view text) {
  const size_t payload = text.size();
  std::string with_note;
  if (dropped_bytes_ > 0) {
    with_note = "\r\n[" + std::to_string(dropped_bytes_) +
                " bytes of output were dropped: the line did not drain]\r\n" + std::string(text);
    text = with_note;
  }
  Status written = port_->Write(text, options_.output_stall_timeout_ms);
  if (written.ok()) {
    dropped_bytes_ = 0;
    return written;
  }
  if (!written.Is(StatusCode::kTimedOut)) return written;
  dropped_bytes_ += payload;
  ++stalls_;
  if (options_.log) {
    options_.log(
        "serial: output to " + port_->path() + " made no progress for " +
        std::to_string(options_.output_stall_timeout_ms) + " ms; dropped " + std::to_string(payload) +
        " bytes (stall " + std::to_string(stalls_) +
        " of this session). The console goes on reading commands; output resumes when the line drains");
  }
  return Status::Ok();
}

}  // namespace cairn
