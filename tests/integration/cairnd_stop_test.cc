// SIGTERM while clients write: every request cairnd took on is answered
// (204 once stored, or 503 with Retry-After), none is cut, and every
// acknowledged reading is there after the restart.
//
// Before: in-flight requests were cut, not answered.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>

#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"
#include "eventually.h"

namespace cairn {
namespace {

constexpr int kWriters = 4;
constexpr int kLinesPerBatch = 20;
// Bounds each writer, so the test ends even if the signal never lands.
constexpr int kMaxBatches = 5000;

struct WriterOutcome {
  std::atomic<int> acknowledged_batches{0};
  int refused_stopping = 0;  // 503 with Retry-After
  int connect_refused = 0;   // a new connection after `Connection: close` was refused: nothing listens
  int unanswered = 0;        // the request went out and no response came back
  int other = 0;             // any other status
  std::string last_problem;
};

class CairndStopTest : public CairndHttpTest {
 protected:
  // Writes batches on a kept-alive connection, as a well-behaved client
  // does (a new connection after `Connection: close`), until cairnd refuses
  // (503), nothing listens any more, or a request goes unanswered.
  void Write(int writer, const std::string& token, WriterOutcome* outcome) {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    if (!client.ok()) {
      outcome->last_problem = client.status().ToString();
      ++outcome->other;
      return;
    }
    const int64_t base = Env::Default()->NowUnixNanos() / 1'000'000'000 - 20 * kMaxBatches;
    for (int batch = 0; batch < kMaxBatches; ++batch) {
      std::string body;
      for (int i = 0; i < kLinesPerBatch; ++i) {
        const int n = batch * kLinesPerBatch + i;
        body += "env,device=w" + std::to_string(writer) + " n=" + std::to_string(n) + "i " +
                std::to_string(base + n) + "\n";
      }
      Result<HttpTestResponse> response = client->Request("POST", "/write?db=sensors&precision=s",
                                                          {{"Authorization", "Bearer " + token}}, body);
      if (!response.ok()) {
        ++outcome->unanswered;
        outcome->last_problem = response.status().ToString();
        return;
      }
      if (response->status == 204) {
        ++outcome->acknowledged_batches;
        if (response->Header("connection") == "close") {
          client = HttpTestClient::Connect("127.0.0.1", port_);
          if (!client.ok()) {
            ++outcome->connect_refused;
            return;
          }
        }
        continue;
      }
      if (response->status == 503 && !response->Header("retry-after").empty()) {
        ++outcome->refused_stopping;
      } else {
        ++outcome->other;
        outcome->last_problem = std::to_string(response->status) + " " + response->body;
      }
      return;
    }
  }

  // Every reading of `device`, page by page.
  size_t CountReadings(const std::string& device, const std::string& token) {
    size_t count = 0;
    std::string page;
    for (int pages = 0; pages < 1000; ++pages) {
      Result<HttpTestResponse> response =
          Get("/v1/tables/sensors/devices/" + device + "/readings?limit=1000&from=-30d" +
                  (page.empty() ? "" : "&page=" + page),
              token);
      if (!response.ok() || response->status != 200) return SIZE_MAX;
      Result<JsonValue> json = JsonValue::Parse(response->body);
      if (!json.ok()) return SIZE_MAX;
      count += json->Find("records")->elements().size();
      const JsonValue* next = json->Find("next_page");
      if (next == nullptr || !next->is_string() || next->text().empty()) return count;
      page = next->text();
    }
    return SIZE_MAX;
  }
};

TEST_F(CairndStopTest, SigtermDuringWritesAnswersEveryRequestAndKeepsEveryAcknowledgedReading) {
  StartDaemon({"--http-plain", "--http-drain-ms", "5000"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  std::vector<WriterOutcome> outcomes(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) writers.emplace_back([&, w] { Write(w, admin, &outcomes[w]); });
  const bool writing = Eventually(
      [&] {
        for (const WriterOutcome& outcome : outcomes)
          if (outcome.acknowledged_batches < 3) return false;
        return true;
      },
      kCairndTimeoutMs);
  ASSERT_TRUE(daemon_->Signal(SIGTERM));
  for (std::thread& writer : writers) writer.join();
  ASSERT_TRUE(writing) << "the writers did not get going";
  EXPECT_TRUE(ExitedWith(daemon_->WaitForExit(kCairndTimeoutMs), 0)) << daemon_->Stderr();

  for (int w = 0; w < kWriters; ++w) {
    const WriterOutcome& outcome = outcomes[w];
    EXPECT_EQ(outcome.unanswered, 0) << "writer " << w << ": " << outcome.last_problem;
    EXPECT_EQ(outcome.other, 0) << "writer " << w << ": " << outcome.last_problem;
    EXPECT_EQ(outcome.refused_stopping + outcome.connect_refused, 1)
        << "writer " << w << " did not end by the stop";
  }
  StartDaemon({"--http-plain"});
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_EQ(CountReadings("w" + std::to_string(w), admin),
              static_cast<size_t>(outcomes[w].acknowledged_batches.load()) * kLinesPerBatch)
        << "writer " << w;
  }
  StopDaemon();
}

}  // namespace
}  // namespace cairn
