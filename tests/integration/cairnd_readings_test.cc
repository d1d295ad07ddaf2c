// cairnd's readings route in every format over loopback: CSV and NDJSON
// pages with their notes as headers, and limit=all streams (chunked, and
// close-delimited to an HTTP/1.0 client) that carry every reading of a
// range longer than any page, read by the test client and by curl. And the
// device list in pages.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/text/json_value.h"
#include "cairnd_http_fixture.h"

namespace cairn {
namespace {

constexpr int kReadings = 25'000;  // two and a half HTTP pages of 10 000

class CairndReadingsTest : public CairndHttpTest {
 protected:
  void SetUp() override {
    StartDaemon({"--http-plain", "--auto-create-tables"});
    token_ = FirstAdminToken();
    ASSERT_FALSE(token_.empty());
    now_seconds_ = Env::Default()->NowUnixNanos() / 1'000'000'000;
    // Odd readings carry the tag site=north (another series), reading 0 a
    // string field with a comma and quotes.
    std::string body;
    for (int n = 0; n < kReadings; ++n) {
      body += "env,device=d1";
      if (n % 2 == 1) body += ",site=north";
      body += " temp=" + std::to_string(n) + ",hum=" + std::to_string(n % 100) + "i";
      if (n == 0) body += ",note=\"a, \\\"quoted\\\" value\"";
      body += " " + std::to_string(Second(n)) + "\n";
    }
    WriteSeconds(body);
  }
  void TearDown() override { StopDaemon(); }

  // Writes line protocol with second timestamps into table t.
  void WriteSeconds(const std::string& body) {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    Result<HttpTestResponse> written =
        client->Request("POST", "/write?db=t&precision=s", {{"Authorization", "Token " + token_}}, body);
    ASSERT_TRUE(written.ok());
    ASSERT_EQ(written->status, 204) << written->body;
  }

  int64_t Second(int n) const { return now_seconds_ - kReadings - 60 + n; }

  Result<HttpTestResponse> Readings(const std::string& query) {
    return Get("/v1/tables/t/devices/d1/readings?" + query, token_);
  }

  static std::vector<std::string> Lines(const std::string& body) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < body.size()) {
      const size_t end = body.find('\n', start);
      EXPECT_NE(end, std::string::npos) << "the body does not end in a newline";
      if (end == std::string::npos) break;
      lines.push_back(body.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  }

  // The temp of each NDJSON line, in order.
  static std::vector<int64_t> Temps(const std::vector<std::string>& lines) {
    std::vector<int64_t> temps;
    for (const std::string& line : lines) {
      Result<JsonValue> row = JsonValue::Parse(line);
      EXPECT_TRUE(row.ok()) << line;
      if (!row.ok()) break;
      temps.push_back(static_cast<int64_t>(row->Find("temp")->number()));
    }
    return temps;
  }

  std::string token_;
  int64_t now_seconds_ = 0;
};

TEST_F(CairndReadingsTest, CsvPagesQuoteValuesAndPutTheNextPageInAHeader) {
  Result<HttpTestResponse> page = Readings("format=csv&limit=3");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200) << page->body;
  EXPECT_EQ(page->Header("content-type"), "text/csv; charset=utf-8; header=present");
  const std::vector<std::string> lines = Lines(page->body);
  ASSERT_EQ(lines.size(), 4u) << page->body;
  // Every column the measure can have, whether or not these rows have it.
  EXPECT_EQ(lines[0], "time,measure,site,version,ttl,hum,note,temp");
  EXPECT_EQ(lines[1].substr(lines[1].find(",env,")), ",env,,0,,0,\"a, \"\"quoted\"\" value\",0");
  EXPECT_EQ(lines[2].substr(lines[2].find(",env,")), ",env,north,0,,1,,1");
  EXPECT_EQ(page->Header("cairn-tags"), "site");
  const std::string next = page->Header("cairn-next-page");
  ASSERT_FALSE(next.empty());

  Result<HttpTestResponse> second = Readings("format=csv&limit=2&page=" + next);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->status, 200) << second->body;
  const std::vector<std::string> more = Lines(second->body);
  ASSERT_EQ(more.size(), 3u);
  EXPECT_EQ(more[0], lines[0]);
  EXPECT_EQ(more[1].substr(more[1].find(",env,")), ",env,north,0,,3,,3");
}

TEST_F(CairndReadingsTest, NdjsonPagesAreTheJsonRecordsOnePerLine) {
  Result<HttpTestResponse> ndjson = Readings("format=ndjson&limit=50&order=desc");
  Result<HttpTestResponse> json = Readings("limit=50&order=desc");
  ASSERT_TRUE(ndjson.ok() && json.ok());
  ASSERT_EQ(ndjson->status, 200) << ndjson->body;
  EXPECT_EQ(ndjson->Header("content-type"), "application/x-ndjson");
  const std::vector<std::string> lines = Lines(ndjson->body);
  ASSERT_EQ(lines.size(), 50u);
  Result<JsonValue> document = JsonValue::Parse(json->body);
  ASSERT_TRUE(document.ok());
  const std::vector<JsonValue>& records = document->Find("records")->elements();
  ASSERT_EQ(records.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    Result<JsonValue> row = JsonValue::Parse(lines[i]);
    ASSERT_TRUE(row.ok()) << lines[i];
    EXPECT_EQ(row->Find("time")->text(), records[i].Find("time")->text());
    EXPECT_EQ(row->Find("temp")->number(), static_cast<double>(kReadings - 1 - static_cast<int>(i)));
  }
  EXPECT_EQ(ndjson->Header("cairn-next-page"), document->Find("next_page")->text());
}

TEST_F(CairndReadingsTest, LimitAllStreamsTheWholeRangeInEveryFormat) {
  // NDJSON both ways: every reading once, in order.
  for (const char* order : {"asc", "desc"}) {
    SCOPED_TRACE(order);
    Result<HttpTestResponse> stream = Readings(std::string("format=ndjson&limit=all&order=") + order);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    ASSERT_EQ(stream->status, 200) << stream->body.substr(0, 300);
    EXPECT_EQ(stream->Header("transfer-encoding"), "chunked");
    EXPECT_EQ(stream->Header("content-length"), "");
    const std::vector<int64_t> temps = Temps(Lines(stream->body));
    ASSERT_EQ(temps.size(), size_t{kReadings});
    for (int n = 0; n < kReadings; ++n) {
      ASSERT_EQ(temps[n], std::string(order) == "asc" ? n : kReadings - 1 - n) << "at line " << n;
    }
  }
  // JSON: one document, the tags named once at its end.
  Result<HttpTestResponse> json = Readings("limit=all");
  ASSERT_TRUE(json.ok());
  ASSERT_EQ(json->status, 200);
  Result<JsonValue> document = JsonValue::Parse(json->body);
  ASSERT_TRUE(document.ok()) << json->body.substr(json->body.size() - 200);
  EXPECT_EQ(document->Find("records")->elements().size(), size_t{kReadings});
  EXPECT_EQ(document->Find("tags")->text(), "site");
  EXPECT_EQ(document->Find("next_page"), nullptr);
  // CSV: one header line, then every reading.
  Result<HttpTestResponse> csv = Readings("format=csv&limit=all&from=" + std::to_string(Second(0) * 1'000'000'000));
  ASSERT_TRUE(csv.ok());
  ASSERT_EQ(csv->status, 200);
  const std::vector<std::string> lines = Lines(csv->body);
  ASSERT_EQ(lines.size(), size_t{kReadings} + 1);
  EXPECT_EQ(lines[0], "time,measure,site,version,ttl,hum,note,temp");
  EXPECT_EQ(lines.back().substr(lines.back().find(",env,")),
            ",env,north,0,,99,," + std::to_string(kReadings - 1));

  // curl, a real client, reads the same stream.
  auto [status, curled] = RunCommand("curl -sS --fail -H 'Authorization: Bearer " + token_ + "' 'http://127.0.0.1:" +
                                         std::to_string(port_) + "/v1/tables/t/devices/d1/readings?format=csv&limit=all'",
                                     /*with_stderr=*/true);
  ASSERT_EQ(status, 0) << curled.substr(0, 300);
  EXPECT_EQ(curled, csv->body);
}

TEST_F(CairndReadingsTest, AnHttp10ClientGetsTheStreamUntilTheConnectionCloses) {
  Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(client
                  ->Send("GET /v1/tables/t/devices/d1/readings?format=ndjson&limit=all HTTP/1.0\r\n"
                         "Authorization: Bearer " +
                         token_ + "\r\n\r\n")
                  .ok());
  Result<HttpTestResponse> response = client->ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->status, 200);
  EXPECT_EQ(response->Header("transfer-encoding"), "");
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_EQ(Temps(Lines(response->body)).size(), size_t{kReadings});
}

TEST_F(CairndReadingsTest, BadFormatsAndStreamsWithAPageAreRefused) {
  for (const char* query : {"format=xml", "format=CSV", "limit=all&page=abc", "limit=al", "format=csv&limit=0"}) {
    SCOPED_TRACE(query);
    Result<HttpTestResponse> refused = Readings(query);
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ(refused->status, 400) << refused->body;
    Result<JsonValue> error = JsonValue::Parse(refused->body);
    ASSERT_TRUE(error.ok()) << refused->body;
    EXPECT_NE(error->Find("error"), nullptr);
  }
  // A stream over an unknown table is a plain 404, not a broken stream.
  Result<HttpTestResponse> missing = Get("/v1/tables/nope/devices/d1/readings?format=csv&limit=all", token_);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404) << missing->body;
  EXPECT_EQ(missing->Header("transfer-encoding"), "");
}

// The device list in pages: by id, each continuing after the last id of
// the one before.
TEST_F(CairndReadingsTest, DeviceListsComeInPages) {
  std::string body;
  for (const char* device : {"d3", "a1", "d2", "z9"}) {
    body += std::string("env,device=") + device + " temp=1 " + std::to_string(Second(0)) + "\n";
  }
  WriteSeconds(body);
  std::vector<std::string> seen;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    Result<HttpTestResponse> response =
        Get("/v1/tables/t/devices?limit=2" + (after.empty() ? "" : "&after=" + after), token_);
    ASSERT_TRUE(response.ok());
    ASSERT_EQ(response->status, 200) << response->body;
    Result<JsonValue> json = JsonValue::Parse(response->body);
    ASSERT_TRUE(json.ok());
    const std::vector<JsonValue>& devices = json->Find("devices")->elements();
    EXPECT_LE(devices.size(), 2u);
    for (const JsonValue& device : devices) seen.push_back(device.Find("device")->text());
    const JsonValue* next = json->Find("next_after");
    if (next == nullptr) break;
    after = next->text();
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "d1", "d2", "d3", "z9"}));
  Result<HttpTestResponse> whole = Get("/v1/tables/t/devices", token_);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->body.find("next_after"), std::string::npos);
  for (const char* bad : {"limit=0", "limit=x", "page=2"}) {
    Result<HttpTestResponse> refused = Get(std::string("/v1/tables/t/devices?") + bad, token_);
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ(refused->status, 400) << bad << ": " << refused->body;
  }
}

}  // namespace
}  // namespace cairn
