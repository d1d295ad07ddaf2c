// HttpApi in process: real engine, real command layer, real token store;
// requests built directly, so every route, scope and error is checked
// without sockets (the server has its own tests).

#include "cairn/http/http_api.h"

#include <map>

#include <gtest/gtest.h>
#include <zlib.h>

#include "cairn/core/engine.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/text/json_value.h"

#include "forwarding_engine.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions engine_options;
    engine_options.maintenance_interval_ms = 0;
    Result<std::unique_ptr<Engine>> engine = Engine::Open(env_, dir_.PathOf("data"), engine_options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateTable("sensors", TableOptions()).ok());
    ASSERT_TRUE(engine_->CreateTable("other", TableOptions()).ok());
    ASSERT_TRUE(RegisterBuiltinCommands(&commands_).ok());
    EngineCommandOptions command_options;
    command_options.data_dir = dir_.PathOf("data");
    ASSERT_TRUE(RegisterEngineCommands(&commands_, engine_.get(), env_, command_options).ok());
    Result<std::unique_ptr<TokenStore>> tokens = TokenStore::Open(env_, dir_.PathOf("data"));
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    tokens_ = std::move(*tokens);
    admin_ = NewToken("admin", {"admin"});
    reader_ = NewToken("reader", {"read:sensors"});
    writer_ = NewToken("writer", {"write:sensors"});
    HttpApiOptions options;
    options.data_dir = dir_.PathOf("data");
    options.index_html = "<!doctype html><title>cairn</title>";
    api_ = std::make_unique<HttpApi>(engine_.get(), env_, &commands_, tokens_.get(), &limiter_, &metrics_,
                                     options);
  }

  std::string NewToken(const std::string& name, std::vector<std::string> scopes) {
    Result<CreatedToken> created = tokens_->Create(name, std::move(scopes));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? created->token : "";
  }

  static HttpRequest Build(const std::string& method, const std::string& target,
                           std::vector<std::pair<std::string, std::string>> headers,
                           const std::string& peer) {
    HttpRequest request;
    request.method = method;
    const size_t question = target.find('?');
    request.path = target.substr(0, question);
    if (question != std::string::npos) request.query = target.substr(question + 1);
    request.headers = std::move(headers);
    request.peer_address = peer;
    return request;
  }

  HttpResponse Call(const std::string& method, const std::string& target, const std::string& token,
                    const std::string& body = "",
                    std::vector<std::pair<std::string, std::string>> headers = {},
                    const std::string& peer = "192.0.2.7") {
    if (!token.empty()) headers.emplace_back("authorization", "Bearer " + token);
    HttpRequest request = Build(method, target, std::move(headers), peer);
    request.body = body;
    return api_->Handle(request);
  }

  // What the server's head check answers for a request whose body is yet
  // to come.
  std::optional<HttpResponse> Head(const std::string& method, const std::string& target,
                                   std::vector<std::pair<std::string, std::string>> headers) {
    return api_->CheckHead(Build(method, target, std::move(headers), "192.0.2.7"));
  }

  static JsonValue Json(const HttpResponse& response) {
    Result<JsonValue> parsed = JsonValue::Parse(response.body);
    EXPECT_TRUE(parsed.ok()) << response.body;
    return parsed.ok() ? *parsed : JsonValue();
  }

  static std::string ErrorMessage(const HttpResponse& response) {
    JsonValue json = Json(response);
    const JsonValue* error = json.Find("error");
    const JsonValue* message = error != nullptr ? error->Find("message") : nullptr;
    return message != nullptr ? message->text() : "(no error message in " + response.body + ")";
  }

  // Line protocol for device `device`, temperatures at `now - i s`.
  std::string Lines(const std::string& device, int count, int64_t base_seconds) {
    std::string body, escaped;
    for (char c : device) escaped += c == ' ' ? std::string("\\ ") : std::string(1, c);
    for (int i = 0; i < count; ++i) {
      body += "env,device=" + escaped + ",room=lab temperature=" + std::to_string(20 + i) + ",humidity=40i " +
              std::to_string(base_seconds + i) + "\n";
    }
    return body;
  }

  Env* env_ = Env::Default();
  ScopedTempDir dir_{"http-api"};
  std::unique_ptr<Engine> engine_;
  CommandRegistry commands_;
  std::unique_ptr<TokenStore> tokens_;
  AuthThrottle limiter_;
  ApiMetrics metrics_;
  std::unique_ptr<HttpApi> api_;
  std::string admin_, reader_, writer_;
  const int64_t now_seconds_ = Env::Default()->NowUnixNanos() / kSecond;
};

// Two series told apart by a tag, both written at one timestamp over /write:
// readings carry their tags and the tags note, and tag.NAME=V filters every
// read; a table declares attributes with PUT.
TEST_F(HttpApiTest, TagParametersFilterReadsAndAttributesAreDeclaredWithTheTable) {
  const int64_t at = now_seconds_ - 60;
  const std::string body = "cpu,device=gw,cpu=cpu0 usage=10i " + std::to_string(at) +
                           "\ncpu,device=gw,cpu=cpu1 usage=20i " + std::to_string(at) + "\n";
  ASSERT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, body).status, 204);
  HttpResponse all = Call("GET", "/v1/tables/sensors/devices/gw/readings?measure=cpu&from=-1h", reader_);
  ASSERT_EQ(all.status, 200) << all.body;
  JsonValue all_json = Json(all);
  ASSERT_EQ(all_json.Find("records")->elements().size(), 2u) << all.body;
  EXPECT_EQ(all_json.Find("tags")->text(), "cpu");
  HttpResponse one = Call("GET", "/v1/tables/sensors/devices/gw/readings?from=-1h&tag.cpu=cpu1", reader_);
  ASSERT_EQ(one.status, 200) << one.body;
  ASSERT_EQ(Json(one).Find("records")->elements().size(), 1u);
  EXPECT_EQ(Json(one).Find("records")->elements()[0].Find("usage")->number(), 20);
  HttpResponse latest = Call("GET", "/v1/tables/sensors/devices/gw/latest?tag.cpu=cpu0", reader_);
  ASSERT_EQ(latest.status, 200) << latest.body;
  EXPECT_EQ(Json(latest).Find("records")->elements()[0].Find("usage")->number(), 10);
  HttpResponse grouped = Call(
      "GET", "/v1/tables/sensors/devices/gw/aggregate?measure=cpu&field=usage&step=1h&fn=sum&from=-2h&group_by=cpu",
      reader_);
  ASSERT_EQ(grouped.status, 200) << grouped.body;
  EXPECT_EQ(Json(grouped).Find("buckets")->elements().size(), 2u) << grouped.body;
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/gw/readings?tag.=x", reader_).status, 400);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/gw/readings?tags.cpu=x", reader_).status, 400);

  HttpResponse created = Call("PUT", "/v1/tables/fleet", admin_, R"({"attributes":["firmware"]})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_NE(created.body.find("\"attributes\":\"firmware\""), std::string::npos) << created.body;
}

TEST_F(HttpApiTest, InfluxWriteThenEveryQuery) {
  const int64_t base = now_seconds_ - 600;
  HttpResponse written = Call("POST", "/write?db=sensors&precision=s", writer_, Lines("pump-1", 30, base));
  ASSERT_EQ(written.status, 204) << written.body;
  ASSERT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, Lines("pump 2", 3, base)).status, 204);

  HttpResponse devices = Call("GET", "/v1/tables/sensors/devices", reader_);
  ASSERT_EQ(devices.status, 200) << devices.body;
  JsonValue device_list = Json(devices);
  ASSERT_NE(device_list.Find("devices"), nullptr) << devices.body;
  ASSERT_EQ(device_list.Find("devices")->elements().size(), 2u);
  EXPECT_EQ(device_list.Find("devices")->elements()[0].Find("device")->text(), "pump 2");

  HttpResponse measures = Call("GET", "/v1/tables/sensors/measures", reader_);
  ASSERT_EQ(measures.status, 200);
  EXPECT_EQ(Json(measures).Find("measures")->elements()[0].Find("measure")->text(), "env");

  // An encoded space in a path segment is part of the device id.
  HttpResponse latest = Call("GET", "/v1/tables/sensors/devices/pump%202/latest", reader_);
  ASSERT_EQ(latest.status, 200) << latest.body;
  JsonValue latest_json = Json(latest);
  ASSERT_EQ(latest_json.Find("records")->elements().size(), 1u);
  EXPECT_EQ(latest_json.Find("records")->elements()[0].Find("temperature")->number(), 22);
  EXPECT_EQ(latest_json.Find("records")->elements()[0].Find("humidity")->number(), 40);

  HttpResponse page1 =
      Call("GET", "/v1/tables/sensors/devices/pump-1/readings?measure=env&limit=20&order=asc", reader_);
  ASSERT_EQ(page1.status, 200) << page1.body;
  JsonValue page1_json = Json(page1);
  ASSERT_EQ(page1_json.Find("records")->elements().size(), 20u);
  ASSERT_NE(page1_json.Find("next_page"), nullptr);
  HttpResponse page2 =
      Call("GET",
           "/v1/tables/sensors/devices/pump-1/readings?measure=env&limit=20&order=asc&page=" +
               page1_json.Find("next_page")->text(),
           reader_);
  ASSERT_EQ(page2.status, 200) << page2.body;
  JsonValue page2_json = Json(page2);
  ASSERT_EQ(page2_json.Find("records")->elements().size(), 10u);
  EXPECT_EQ(page2_json.Find("next_page"), nullptr);
  EXPECT_EQ(page2_json.Find("records")->elements()[9].Find("temperature")->number(), 49);

  HttpResponse descending =
      Call("GET", "/v1/tables/sensors/devices/pump-1/readings?order=desc&limit=1&from=-1h", reader_);
  ASSERT_EQ(descending.status, 200) << descending.body;
  EXPECT_EQ(Json(descending).Find("records")->elements()[0].Find("temperature")->number(), 49);

  HttpResponse aggregate =
      Call("GET",
           "/v1/tables/sensors/devices/pump-1/aggregate?measure=env&field=temperature&step=1h"
           "&fn=min,max,count&from=-2h",
           reader_);
  ASSERT_EQ(aggregate.status, 200) << aggregate.body;
  double minimum = 1e9, maximum = -1e9, count = 0;
  const JsonValue aggregate_json = Json(aggregate);
  for (const JsonValue& bucket : aggregate_json.Find("buckets")->elements()) {
    minimum = std::min(minimum, bucket.Find("min")->number());
    maximum = std::max(maximum, bucket.Find("max")->number());
    count += bucket.Find("count")->number();
  }
  EXPECT_EQ(minimum, 20);
  EXPECT_EQ(maximum, 49);
  EXPECT_EQ(count, 30);

  HttpResponse batch =
      Call("POST", "/v1/tables/sensors/latest", reader_, R"({"devices":["pump-1","pump 2","none"]})");
  ASSERT_EQ(batch.status, 200) << batch.body;
  JsonValue batch_json = Json(batch);
  ASSERT_EQ(batch_json.Find("records")->elements().size(), 2u);
  std::map<std::string, double> latest_by_device;
  for (const JsonValue& record : batch_json.Find("records")->elements()) {
    latest_by_device[record.Find("device")->text()] = record.Find("temperature")->number();
  }
  EXPECT_EQ(latest_by_device, (std::map<std::string, double>{{"pump 2", 22}, {"pump-1", 49}}));
}

TEST_F(HttpApiTest, PartialWriteStoresTheGoodLinesAndNamesTheBadOnes) {
  const std::string body = "env,device=d1 temperature=1 " + std::to_string(now_seconds_) +
                           "\n"
                           "env,device=d1 temperature= " +
                           std::to_string(now_seconds_ + 1) +
                           "\n"
                           "env temperature=3\n"
                           "env,device=d1 temperature=4 " +
                           std::to_string(now_seconds_ + 3) + "\n";
  HttpResponse response = Call("POST", "/write?db=sensors&precision=s", writer_, body);
  ASSERT_EQ(response.status, 400);
  JsonValue json = Json(response);
  EXPECT_EQ(json.Find("stored")->number(), 2);
  ASSERT_EQ(json.Find("lines")->elements().size(), 2u);
  EXPECT_EQ(json.Find("lines")->elements()[0].Find("line")->number(), 2);
  EXPECT_EQ(json.Find("lines")->elements()[1].Find("line")->number(), 3);
  EXPECT_NE(json.Find("lines")->elements()[1].Find("reason")->text().find("device"), std::string::npos);
  EXPECT_NE(ErrorMessage(response).find("2 lines rejected, first: line 2"), std::string::npos);
  HttpResponse readings = Call("GET", "/v1/tables/sensors/devices/d1/readings?from=-1h&to=%2B1h", reader_);
  ASSERT_EQ(readings.status, 200) << readings.body;
  EXPECT_EQ(Json(readings).Find("records")->elements().size(), 2u);
}

// A body larger than the slice the API stores at a time (1 MiB): the
// refused lines of every slice are counted and named by their line in the
// body, the first hundred reported, and every good line is stored.
TEST_F(HttpApiTest, ALargeBodyIsStoredAndAnsweredAsOne) {
  constexpr int kLines = 40000;  // about 3 MiB: three slices
  std::string body;
  int bad = 0;
  for (int i = 1; i <= kLines; ++i) {
    if (i % 97 == 0) {
      body += "env temperature=" + std::to_string(i) + "\n";  // no device tag
      ++bad;
      continue;
    }
    body += "env,device=bulk-" + std::to_string(i % 4) + ",site=north-hall-with-a-long-name temperature=" +
            std::to_string(i) + ",humidity=" + std::to_string(i % 100) + " " +
            std::to_string(now_seconds_ - kLines + i) + "\n";
  }
  ASSERT_GT(body.size(), size_t{2 << 20});
  HttpResponse response = Call("POST", "/write?db=sensors&precision=s", writer_, body);
  ASSERT_EQ(response.status, 400) << response.body;
  JsonValue json = Json(response);
  EXPECT_EQ(json.Find("stored")->number(), kLines - bad);
  EXPECT_NE(ErrorMessage(response).find(std::to_string(bad) + " lines rejected, first: line 97"), std::string::npos)
      << response.body;
  const auto& lines = json.Find("lines")->elements();
  ASSERT_EQ(lines.size(), 100u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].Find("line")->number(), 97.0 * (i + 1));
  EXPECT_EQ(json.Find("lines_not_shown")->number(), bad - 100);
  // Sent again: every good line is a duplicate, in every slice.
  HttpResponse again = Call("POST", "/write?db=sensors&precision=s", writer_, body);
  ASSERT_EQ(again.status, 400);
  EXPECT_EQ(Json(again).Find("stored")->number(), 0);
  EXPECT_EQ(Json(again).Find("duplicates")->number(), kLines - bad);
  // Every slice's readings of one device, counted whole (a day holds them).
  HttpResponse counted = Call("GET",
                              "/v1/tables/sensors/devices/bulk-1/aggregate?measure=env&field=temperature"
                              "&step=1h&fn=count&from=-1d&to=%2B1h",
                              reader_);
  ASSERT_EQ(counted.status, 200) << counted.body;
  double count = 0;
  const JsonValue counted_json = Json(counted);
  for (const JsonValue& bucket : counted_json.Find("buckets")->elements()) count += bucket.Find("count")->number();
  double expected = 0;
  for (int i = 1; i <= kLines; ++i) expected += (i % 97 != 0 && i % 4 == 1) ? 1 : 0;
  EXPECT_EQ(count, expected);
}

// An engine whose disk fills after its first write: the second write of a
// body is refused as a whole, as a full filesystem refuses it.
class FillsAfterOneWrite : public ForwardingEngine {
 public:
  using ForwardingEngine::ForwardingEngine;
  Result<WriteResult> Write(const std::string& table, const std::vector<Record>& records) override {
    if (writes_++ > 0) return Status::ResourceExhausted("the filesystem holding the data directory is full");
    return ForwardingEngine::Write(table, records);
  }

 private:
  int writes_ = 0;
};

// A body whose write the engine refuses midway: the answer is the engine's
// error, the first slice stays stored, and the body sent again stores the
// rest with the first slice's lines as duplicates.
TEST_F(HttpApiTest, ABodyRefusedMidwayKeepsItsFirstSliceAndCanBeSentAgain) {
  constexpr int kLines = 40000;  // about 2.5 MiB: three slices
  std::string body;
  for (int i = 1; i <= kLines; ++i) {
    body += "env,device=mid-" + std::to_string(i % 2) + ",site=a-site-with-a-long-name temperature=" +
            std::to_string(i) + " " + std::to_string(now_seconds_ - kLines + i) + "\n";
  }
  ASSERT_GT(body.size(), size_t{2 << 20});
  FillsAfterOneWrite filling(engine_.get());
  HttpApiOptions options;
  options.data_dir = dir_.PathOf("data");
  HttpApi full(&filling, env_, &commands_, tokens_.get(), &limiter_, &metrics_, options);
  HttpRequest request;
  request.method = "POST";
  request.path = "/write";
  request.query = "db=sensors&precision=s";
  request.headers = {{"authorization", "Token " + writer_}};
  request.body = body;
  // Readings stored for the two devices, counted whole (a day holds them).
  const auto stored = [&]() {
    double count = 0;
    for (const char* device : {"mid-0", "mid-1"}) {
      const HttpResponse counted = Call("GET",
                                        std::string("/v1/tables/sensors/devices/") + device +
                                            "/aggregate?measure=env&field=temperature&step=1h&fn=count"
                                            "&from=-1d&to=%2B1h",
                                        reader_);
      EXPECT_EQ(counted.status, 200) << counted.body;
      const JsonValue json = Json(counted);
      for (const JsonValue& bucket : json.Find("buckets")->elements()) count += bucket.Find("count")->number();
    }
    return count;
  };
  const HttpResponse refused = full.Handle(request);
  EXPECT_EQ(refused.status, 507) << refused.body;
  EXPECT_NE(ErrorMessage(refused).find("full"), std::string::npos) << refused.body;
  const double first_slice = stored();
  EXPECT_GT(first_slice, 0);
  EXPECT_LT(first_slice, kLines / 2);

  const HttpResponse again = Call("POST", "/write?db=sensors&precision=s", writer_, body);
  ASSERT_EQ(again.status, 204) << again.body;
  EXPECT_EQ(stored(), kLines);
}

std::string Gzip(const std::string& text) {
  z_stream stream = {};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, text.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

TEST_F(HttpApiTest, V2WriteAcceptsGzipAndPrecision) {
  const std::string body = Lines("gz", 5, now_seconds_ * 1000 - 5000);
  HttpResponse response = Call("POST", "/api/v2/write?bucket=sensors&org=x&precision=ms", writer_, Gzip(body),
                               {{"content-encoding", "gzip"}});
  ASSERT_EQ(response.status, 204) << response.body;
  EXPECT_EQ(Json(Call("GET", "/v1/tables/sensors/devices/gz/readings?from=-1d", reader_))
                .Find("records")
                ->elements()
                .size(),
            5u);
  HttpResponse damaged = Call("POST", "/api/v2/write?bucket=sensors", writer_, Gzip(body).substr(0, 20),
                              {{"content-encoding", "gzip"}});
  EXPECT_EQ(damaged.status, 400);
  EXPECT_NE(ErrorMessage(damaged).find("gzip"), std::string::npos);
  EXPECT_EQ(Call("POST", "/write?db=sensors", writer_, body, {{"content-encoding", "br"}}).status, 415);
}

// A gzip body larger than the window the API inflates at a time: lines cut
// by a window's edge (some with a LF inside a quoted string) are read whole,
// line numbers run on across windows, and the answer is that of the same
// body sent plain. A body cut short stores nothing, even where its first
// windows are whole.
TEST_F(HttpApiTest, AGzipBodyIsReadInWindowsAndAnsweredAsThePlainOne) {
  constexpr int kLines = 40000;  // about 3 MiB inflated
  std::string body;
  std::vector<double> bad_lines;  // numbered as the body's LFs number them
  for (int i = 1, line = 1; i <= kLines; ++i, ++line) {
    const std::string at = " " + std::to_string(now_seconds_ - kLines + i) + "\n";
    if (i % 89 == 0) {
      body += "env temperature=" + std::to_string(i) + at;  // no device tag
      bad_lines.push_back(line);
    } else if (i % 7 == 0) {
      body += "env,device=gz-note note=\"line " + std::to_string(i) + "\nof two\"" + at;
      ++line;
    } else {
      body += "env,device=gz-" + std::to_string(i % 5) + ",site=a-site-with-a-long-name temperature=" +
              std::to_string(i) + at;
    }
  }
  const std::string compressed = Gzip(body);
  const HttpResponse cut = Call("POST", "/write?db=sensors&precision=s", writer_,
                                compressed.substr(0, compressed.size() * 3 / 4), {{"content-encoding", "gzip"}});
  EXPECT_EQ(cut.status, 400);
  EXPECT_NE(ErrorMessage(cut).find("gzip body is truncated"), std::string::npos) << cut.body;
  EXPECT_EQ(Json(Call("GET", "/v1/tables/sensors/devices/gz-1/readings?from=-1d&to=%2B1h", reader_))
                .Find("records")
                ->elements()
                .size(),
            0u);

  const HttpResponse gzipped =
      Call("POST", "/write?db=sensors&precision=s", writer_, compressed, {{"content-encoding", "gzip"}});
  ASSERT_EQ(gzipped.status, 400) << gzipped.body;
  const int bad = kLines / 89;
  const JsonValue gzipped_json = Json(gzipped);
  EXPECT_EQ(gzipped_json.Find("stored")->number(), kLines - bad);
  const auto& lines = gzipped_json.Find("lines")->elements();
  ASSERT_EQ(lines.size(), 100u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].Find("line")->number(), bad_lines[i]);
  const HttpResponse plain = Call("POST", "/write?db=sensors&precision=s", writer_, body);
  ASSERT_EQ(plain.status, 400) << plain.body;
  EXPECT_EQ(Json(plain).Find("duplicates")->number(), kLines - bad);
  EXPECT_EQ(Json(plain).Find("lines")->Serialize(), gzipped_json.Find("lines")->Serialize());

  const HttpResponse notes =
      Call("GET", "/v1/tables/sensors/devices/gz-note/readings?order=desc&limit=1&from=-1d&to=%2B1h", reader_);
  ASSERT_EQ(notes.status, 200) << notes.body;
  EXPECT_EQ(Json(notes).Find("records")->elements()[0].Find("note")->text(),
            "line " + std::to_string(kLines / 7 * 7) + "\nof two");
}

TEST_F(HttpApiTest, GzipBombsAreRefused) {
  HttpApiOptions options;
  options.data_dir = dir_.PathOf("data");
  options.max_decompressed_body_bytes = 1 << 20;
  HttpApi small(engine_.get(), env_, &commands_, tokens_.get(), &limiter_, &metrics_, options);
  HttpRequest request;
  request.method = "POST";
  request.path = "/write";
  request.query = "db=sensors";
  request.headers = {{"authorization", "Token " + writer_}, {"content-encoding", "gzip"}};
  request.body = Gzip(std::string(8 << 20, '\n'));
  HttpResponse response = small.Handle(request);
  EXPECT_EQ(response.status, 413);
}

TEST_F(HttpApiTest, UnknownTablesAre404UnlessAutoCreated) {
  HttpResponse missing = Call("POST", "/write?db=nope", admin_, Lines("d", 1, now_seconds_));
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(ErrorMessage(missing).find("PUT /v1/tables/nope"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/tables/nope/devices", admin_).status, 404);

  HttpApiOptions options;
  options.data_dir = dir_.PathOf("data");
  options.auto_create_tables = true;
  HttpApi creating(engine_.get(), env_, &commands_, tokens_.get(), &limiter_, &metrics_, options);
  HttpRequest request;
  request.method = "POST";
  request.path = "/write";
  request.query = "db=fresh&precision=s";
  request.headers = {{"authorization", "Bearer " + admin_}};
  request.body = Lines("d", 2, now_seconds_);
  EXPECT_EQ(creating.Handle(request).status, 204);
  EXPECT_TRUE(engine_->GetTable("fresh").ok());
}

TEST_F(HttpApiTest, TablesAreCreatedListedAndDroppedByAdmins) {
  HttpResponse created = Call("PUT", "/v1/tables/plant?retention=7d", admin_, R"({"period":"hour"})");
  ASSERT_EQ(created.status, 201) << created.body;
  Result<TableInfo> info = engine_->GetTable("plant");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->options.period, Period::kHour);
  EXPECT_EQ(info->options.retention_seconds, 7 * 86400);
  EXPECT_EQ(Call("PUT", "/v1/tables/plant", admin_).status, 409);
  EXPECT_EQ(Call("PUT", "/v1/tables/bad", admin_, R"({"colour":"red"})").status, 400);
  EXPECT_EQ(Call("PUT", "/v1/tables/bad", admin_, "{").status, 400);
  EXPECT_EQ(Call("PUT", "/v1/tables/x", reader_).status, 403);

  // A token sees only the tables it can read.
  HttpResponse mine = Call("GET", "/v1/tables", reader_);
  ASSERT_EQ(mine.status, 200);
  ASSERT_EQ(Json(mine).Find("tables")->elements().size(), 1u);
  EXPECT_EQ(Json(mine).Find("tables")->elements()[0].Find("table")->text(), "sensors");
  EXPECT_EQ(Json(Call("GET", "/v1/tables", admin_)).Find("tables")->elements().size(), 3u);

  EXPECT_EQ(Call("DELETE", "/v1/tables/plant", writer_).status, 403);
  EXPECT_EQ(Call("DELETE", "/v1/tables/plant", admin_).status, 200);
  EXPECT_EQ(engine_->GetTable("plant").status().code(), StatusCode::kNotFound);
}

TEST_F(HttpApiTest, TokensAreCheckedAndScoped) {
  HttpResponse anonymous = Call("GET", "/v1/tables/sensors/devices", "");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_NE(anonymous.body.find("needs a token"), std::string::npos);
  bool challenged = false;
  for (const auto& [name, value] : anonymous.headers) challenged |= name == "WWW-Authenticate";
  EXPECT_TRUE(challenged);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices", admin_ + "x").status, 401);

  // Scopes: a table of its own, and only the granted access.
  EXPECT_EQ(Call("GET", "/v1/tables/other/devices", reader_).status, 403);
  EXPECT_EQ(Call("POST", "/write?db=sensors", reader_, Lines("d", 1, now_seconds_)).status, 403);
  EXPECT_EQ(Call("POST", "/write?db=other", writer_, Lines("d", 1, now_seconds_)).status, 403);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices", writer_).status, 403);
  EXPECT_EQ(Call("GET", "/v1/stats", reader_).status, 403);
  EXPECT_EQ(Call("GET", "/v1/stats", admin_).status, 200);

  // InfluxDB 1.x clients: Basic auth with the token as password, or ?p=.
  const std::string basic = "Basic " + std::string("dXNlcjo=");  // "user:" and no password
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices", "", "", {{"authorization", basic}}).status, 401);
  EXPECT_EQ(
      Call("POST", "/write?db=sensors&u=any&p=" + writer_ + "&precision=s", "", Lines("p", 1, now_seconds_))
          .status,
      204);
}

TEST_F(HttpApiTest, AFailingCredentialIsSlowedButValidTokensFromItsAddressPass) {
  const std::string revoked = NewToken("revoked", {"write:sensors"});
  ASSERT_TRUE(tokens_->Revoke("revoked").ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Call("GET", "/v1/tables", revoked, "", {}, "198.51.100.9").status, 401);
    EXPECT_EQ(Call("GET", "/v1/tables", admin_, "", {}, "198.51.100.9").status, 200) << "after failure " << i;
  }
  HttpResponse blocked = Call("GET", "/v1/tables", revoked, "", {}, "198.51.100.9");
  EXPECT_EQ(blocked.status, 429);
  bool retry_after = false;
  for (const auto& [name, value] : blocked.headers)
    retry_after |= name == "Retry-After" && std::stoi(value) > 0;
  EXPECT_TRUE(retry_after);
  EXPECT_FALSE(blocked.close_connection) << "the address itself is not blocked";
  // The valid token from the same address, and a write, are never refused.
  EXPECT_EQ(Call("GET", "/v1/tables", admin_, "", {}, "198.51.100.9").status, 200);
  EXPECT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, Lines("still", 1, now_seconds_ - 5), {},
                 "198.51.100.9")
                .status,
            204);
  // Another wrong credential is judged on its own, wherever it comes from.
  EXPECT_EQ(Call("GET", "/v1/tables", "cairn_0000000000000000_guess", "", {}, "198.51.100.9").status, 401);
  EXPECT_EQ(Call("GET", "/v1/tables", revoked, "", {}, "198.51.100.10").status, 429);
}

TEST_F(HttpApiTest, TheHeadCheckRefusesMissingAndInvalidTokensOnly) {
  EXPECT_FALSE(Head("GET", "/healthz", {}).has_value());
  EXPECT_FALSE(Head("GET", "/", {}).has_value());
  EXPECT_FALSE(Head("POST", "/write?db=sensors", {{"authorization", "Bearer " + writer_}}).has_value());
  EXPECT_FALSE(Head("POST", "/write?db=sensors&p=" + writer_, {}).has_value()) << "InfluxDB 1.x's ?p=";
  std::optional<HttpResponse> anonymous = Head("POST", "/write?db=sensors", {});
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_EQ(anonymous->status, 401);
  std::optional<HttpResponse> wrong = Head("POST", "/write?db=sensors", {{"authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->status, 401);
  // Scopes need the body's route and parameters: Handle decides them.
  EXPECT_FALSE(Head("POST", "/write?db=other", {{"authorization", "Bearer " + reader_}}).has_value());
}

TEST_F(HttpApiTest, HealthzSaysOnlyTheLevelAndV1HealthNeedsAReadScope) {
  HttpResponse health = Call("GET", "/healthz", "");
  ASSERT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "{\"status\":\"ok\"}\n");
  EXPECT_EQ(health.body.find(dir_.path()), std::string::npos);
  HttpResponse full = Call("GET", "/v1/health", reader_);
  ASSERT_EQ(full.status, 200) << full.body;
  EXPECT_EQ(Json(full).Find("status")->text(), "ok");
  EXPECT_NE(full.body.find("free_bytes"), std::string::npos);
  EXPECT_NE(full.body.find(dir_.PathOf("data")), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/health", writer_).status, 403);
  // /healthz with a reading token has the details too; without one, or
  // with a token that only writes, the level alone.
  EXPECT_NE(Call("GET", "/healthz", reader_).body.find("free_bytes"), std::string::npos);
  EXPECT_EQ(Call("GET", "/healthz", writer_).body, "{\"status\":\"ok\"}\n");
  EXPECT_EQ(Call("GET", "/healthz", "cairn_0000000000000000_guess").body, "{\"status\":\"ok\"}\n");
  EXPECT_EQ(Call("GET", "/v1/health", "").status, 401);
  EXPECT_EQ(Call("GET", "/v1/health", admin_).status, 200);
}

TEST_F(HttpApiTest, TheSeriesLimitIsSetOverHttpAndNamedInRefusals) {
  HttpResponse created = Call("PUT", "/v1/tables/small?max_series=2", admin_);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(engine_->GetTable("small")->options.max_series, 2u);
  ASSERT_TRUE(tokens_->Create("small-writer", {"write:small"}).ok());
  std::string body;
  for (int i = 0; i < 3; ++i)
    body += "env,device=d" + std::to_string(i) + " t=1 " + std::to_string(now_seconds_) + "\n";
  HttpResponse over = Call("POST", "/write?db=small&precision=s", admin_, body);
  ASSERT_EQ(over.status, 400) << over.body;
  EXPECT_NE(ErrorMessage(over).find("line 3: table 'small' holds its limit of 2 series (max_series)"),
            std::string::npos)
      << over.body;
  EXPECT_EQ(Json(over).Find("stored")->number(), 2);

  HttpResponse raised = Call("PATCH", "/v1/tables/small", admin_, R"({"max_series":3})");
  ASSERT_EQ(raised.status, 200) << raised.body;
  EXPECT_EQ(engine_->GetTable("small")->options.max_series, 3u);
  EXPECT_EQ(Call("POST", "/write?db=small&precision=s", admin_, body).status, 204);
  EXPECT_EQ(Call("PATCH", "/v1/tables/small?period=hour", admin_).status, 400) << "the period is fixed";
  EXPECT_EQ(Call("PATCH", "/v1/tables/small?max_series=-1", admin_).status, 400);
  EXPECT_EQ(Call("PATCH", "/v1/tables/small?max_series=3", writer_).status, 403);
  EXPECT_EQ(Call("PATCH", "/v1/tables/none?max_series=3", admin_).status, 404);
}

TEST_F(HttpApiTest, ARewriteWithOtherValuesIsRefusedAndCountedUnlessTheTableOverwrites) {
  const std::string at = " " + std::to_string(now_seconds_) + "\n";
  ASSERT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, "env,device=d1 t=1,h=2i" + at).status, 204);
  // The same point again is a duplicate: retries stay silent.
  EXPECT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, "env,device=d1 h=2i,t=1" + at).status, 204);
  HttpResponse other = Call("POST", "/write?db=sensors&precision=s", writer_,
                            "env,device=d2 t=5" + at + "env,device=d1 t=1.5,h=2i" + at);
  ASSERT_EQ(other.status, 400) << other.body;
  EXPECT_NE(ErrorMessage(other).find("1 line rejected, first: line 2: version 0 of this point is stored with "
                                     "other values: field 't' is 1.5 here, 1 stored"),
            std::string::npos)
      << other.body;
  EXPECT_EQ(Json(other).Find("stored")->number(), 1);
  EXPECT_EQ(Json(other).Find("conflicts")->number(), 1);
  const std::string metrics = Call("GET", "/metrics", admin_).body;
  EXPECT_NE(metrics.find("cairn_write_records_total{outcome=\"conflict\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cairn_engine_records_conflict_total 1\n"), std::string::npos);

  ASSERT_EQ(Call("PATCH", "/v1/tables/sensors", admin_, R"({"on_conflict":"overwrite"})").status, 200);
  EXPECT_EQ(engine_->GetTable("sensors")->options.on_conflict, ConflictPolicy::kOverwrite);
  EXPECT_EQ(Call("PATCH", "/v1/tables/sensors?on_conflict=sometimes", admin_).status, 400);
  EXPECT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, "env,device=d1 t=1.5,co2=400i" + at).status,
            204);
  HttpResponse latest = Call("GET", "/v1/tables/sensors/devices/d1/latest", reader_);
  ASSERT_EQ(latest.status, 200) << latest.body;
  EXPECT_NE(latest.body.find("\"co2\":400"), std::string::npos) << latest.body;
  EXPECT_NE(latest.body.find("\"h\":2"), std::string::npos) << latest.body;
  EXPECT_NE(latest.body.find("\"t\":1.5"), std::string::npos) << latest.body;
  EXPECT_EQ(Call("PUT", "/v1/tables/merging?on_conflict=overwrite", admin_).status, 201);
  EXPECT_EQ(engine_->GetTable("merging")->options.on_conflict, ConflictPolicy::kOverwrite);
}

TEST_F(HttpApiTest, ErrorsAreJsonWithTheRightStatus) {
  EXPECT_EQ(Call("GET", "/nowhere", admin_).status, 404);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/d/elsewhere", admin_).status, 404);
  HttpResponse wrong_method = Call("POST", "/v1/tables/sensors/devices", admin_);
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(ErrorMessage(wrong_method), "method not allowed here; use GET");
  HttpResponse typo = Call("GET", "/v1/tables/sensors/devices/d/readings?form=-1h", admin_);
  EXPECT_EQ(typo.status, 400);
  EXPECT_NE(ErrorMessage(typo).find("unknown query parameter 'form'"), std::string::npos);
  HttpResponse bad_time = Call("GET", "/v1/tables/sensors/devices/d/readings?from=yesterday", admin_);
  EXPECT_EQ(bad_time.status, 400);
  EXPECT_NE(ErrorMessage(bad_time).find("yesterday"), std::string::npos);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/%zz/latest", admin_).status, 400);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/d/readings?order=up", admin_).status, 400);
  EXPECT_EQ(Call("GET", "/v1/tables/sensors/devices/d/aggregate?measure=env", admin_).status, 400);
  EXPECT_EQ(Call("POST", "/v1/tables/sensors/latest", admin_, R"({"devices":[]})").status, 400);
  EXPECT_EQ(Call("POST", "/write", admin_, "x").status, 400);
  EXPECT_EQ(Call("POST", "/write?db=sensors&precision=d", admin_, "x").status, 400);
  // Every error above carried the JSON shape; spot-check one fully.
  JsonValue json = Json(typo);
  EXPECT_EQ(json.Find("error")->Find("code")->text(), "Bad Request");
}

TEST_F(HttpApiTest, PublicEndpointsNeedNoToken) {
  HttpResponse page = Call("GET", "/", "");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body, "<!doctype html><title>cairn</title>");
  HttpResponse health = Call("GET", "/healthz", "");
  ASSERT_EQ(health.status, 200);
  EXPECT_EQ(Json(health).Find("status")->text(), "ok");
  EXPECT_EQ(Call("GET", "/ping", "").status, 204);
  EXPECT_EQ(Call("GET", "/metrics", "").status, 401);
}

TEST_F(HttpApiTest, MetricsCountRequestsWritesAndFailures) {
  ASSERT_EQ(Call("POST", "/write?db=sensors&precision=s", writer_, Lines("m", 4, now_seconds_ - 10)).status,
            204);
  ASSERT_EQ(Call("GET", "/v1/tables/sensors/devices", reader_).status, 200);
  ASSERT_EQ(Call("GET", "/v1/tables/sensors/devices", "bad").status, 401);
  HttpResponse metrics = Call("GET", "/metrics", reader_);
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = metrics.body;
  EXPECT_NE(text.find("cairn_http_requests_total{route=\"/write\",code=\"204\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cairn_http_requests_total{route=\"/v1/tables/{table}/devices\",code=\"200\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("cairn_write_records_total{outcome=\"stored\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("cairn_auth_failures_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("cairn_queries_total{kind=\"devices\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("cairn_http_request_duration_seconds_count{route=\"/write\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE cairn_engine_log_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("cairn_disk_free_bytes "), std::string::npos);
  // This test process's real resident set: more than a MiB, less than 16 GiB.
  const size_t rss = text.find("\nprocess_resident_memory_bytes ");
  ASSERT_NE(rss, std::string::npos);
  const uint64_t resident = std::stoull(text.substr(rss + 31));
  EXPECT_GT(resident, uint64_t{1} << 20);
  EXPECT_LT(resident, uint64_t{16} << 30);
  EXPECT_NE(text.find("# TYPE cairn_clock_held_readings gauge\n"), std::string::npos);
}

// A gateway that booted at 1970 without a time source: a line without a
// timestamp is acknowledged, waits for the clock, and is stamped exactly
// when the clock is set; /metrics and /healthz say so meanwhile.
// The clock is a base so that it outlives the engine the fixture holds.
struct ManualClockHolder {
  ManualClockEnv manual_{Env::Default()};
};

class HttpApiUntrustedClockTest : protected ManualClockHolder, public HttpApiTest {
 protected:
  HttpApiUntrustedClockTest() {
    manual_.SetUnixNanos(9 * kSecond);
    manual_.SetWallClockSynchronized(false);
    env_ = &manual_;
  }
};

TEST_F(HttpApiUntrustedClockTest, ALineWithoutATimestampWaitsForTheClockAndIsStampedExactly) {
  ASSERT_EQ(Call("POST", "/write?db=sensors", writer_, "env,device=d1 temperature=20.5\n").status, 204);
  std::string metrics = Call("GET", "/metrics", reader_).body;
  EXPECT_NE(metrics.find("cairn_clock_trusted 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cairn_clock_held_readings 1\n"), std::string::npos);
  EXPECT_EQ(engine_->Latest("sensors", "d1")->size(), 0u);
  EXPECT_NE(Call("GET", "/healthz", reader_).body.find("clock.untrusted"), std::string::npos);

  const int64_t true_time = int64_t{1'799'913'600} * kSecond;
  manual_.AdvanceSeconds(5);
  manual_.SetUnixNanos(true_time);
  manual_.SetWallClockSynchronized(true);
  ASSERT_TRUE(engine_->Maintain().ok());
  Result<std::vector<RecordRow>> latest = engine_->Latest("sensors", "d1");
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 1u);
  // It arrived 5 s (monotonic) before the clock was set.
  EXPECT_EQ((*latest)[0].timestamp, true_time - 5 * kSecond);
  metrics = Call("GET", "/metrics", reader_).body;
  EXPECT_NE(metrics.find("cairn_clock_readings_total{outcome=\"restamped\"} 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("cairn_clock_held_readings 0\n"), std::string::npos);
}

}  // namespace
}  // namespace cairn
