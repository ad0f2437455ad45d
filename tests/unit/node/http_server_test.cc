// The HTTP server behind /metrics and the probes (device-plugin/http_server.h) under what any
// client that reaches the port can do: loop scrapes, hold answers unread, open connection after
// connection. Real loopback TCP; the costly route is a computation the test holds at a gate, so
// "a scrape is in flight" is a state the test sets, not a time it hopes for.
#include "node/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/loopback_http.h"

namespace rdmak8s::node {
namespace {

using namespace std::chrono_literals;

// Failure bound of every wait: generous for a loaded 2-core machine, never a pass criterion.
constexpr auto kWait = 20s;

int Connect(int port) { return testing::ConnectLoopback(port, std::chrono::duration_cast<std::chrono::seconds>(kWait)); }
void SendGet(int fd, const std::string& path) { testing::SendRequest(fd, path); }
std::string HttpGet(int port, const std::string& path) {
  return testing::HttpRequest(port, path, "GET", std::chrono::duration_cast<std::chrono::seconds>(kWait));
}
using testing::Body;
using testing::StatusLine;

// Waits until `pred` holds (true) or kWait passes (false).
bool WaitUntil(const std::function<bool()>& pred) {
  for (auto until = std::chrono::steady_clock::now() + kWait; !pred();) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The costly route: blocks while the gate is closed, counts how many run at once.
class GatedScrape {
 public:
  explicit GatedScrape(size_t body_bytes) : body_(body_bytes, 'x') {}

  std::string Compute() {
    int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return open_; });
    }
    --in_flight_;
    return body_;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitEntered() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [this] { return entered_; });
  }
  int max_in_flight() const { return max_in_flight_.load(); }
  const std::string& body() const { return body_; }

 private:
  std::string body_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool entered_ = false;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

HttpResponse Probes(const std::string& path) {
  if (path == "/livez") return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  return HttpResponse{404, "text/plain; charset=utf-8", "not found\n"};
}

HttpServer::CachedRoute Route(GatedScrape& scrape, std::chrono::milliseconds fresh_for) {
  return HttpServer::CachedRoute{"/metrics", "text/plain; version=0.0.4", fresh_for,
                                 [&scrape] { return scrape.Compute(); }};
}

// Issue 24 item 8: four looping scrapers and slow readers made every probe time out, because
// the scrape ran on the thread that answers the probes. Here a scrape is held in flight: the
// probe is answered all the same, the scrapers share one computation at a time, and a flood of
// connections never takes more than the cap.
TEST(HttpServerTest, ProbesAreAnsweredWhileScrapersLoopSlowReadersHoldAnswersAndConnectionsFlood) {
  GatedScrape scrape(1 << 20);
  HttpServer::Options options;
  options.request_timeout = 120s;  // nobody is dropped for time here: the cap is what is tested
  options.max_connections = 16;
  options.send_buffer_bytes = 4096;  // a 1 MiB answer cannot sit in the kernel for a slow reader
  HttpServer server(options, Probes, Route(scrape, 0ms));
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  const int port = server.port();

  std::atomic<bool> stop{false};
  std::atomic<int> full_scrapes{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 4; ++i) {
    scrapers.emplace_back([&] {
      while (!stop) {
        std::string r = HttpGet(port, "/metrics");
        if (Body(r).size() == scrape.body().size()) ++full_scrapes;
      }
    });
  }
  std::vector<int> slow_readers;
  for (int i = 0; i < 8; ++i) {
    int fd = Connect(port);
    ASSERT_GE(fd, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    SendGet(fd, "/metrics");
    slow_readers.push_back(fd);
  }
  ASSERT_TRUE(scrape.WaitEntered()) << "no scrape computation started";

  // A scrape is in flight and blocked: the old server (scrape on the loop) never answers this.
  EXPECT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK");

  scrape.Open();
  ASSERT_TRUE(WaitUntil([&] { return full_scrapes.load() >= 12; }))
      << "scrapers got " << full_scrapes.load() << " full answers";
  EXPECT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK");

  // A flood of connections that send nothing, while the scrapers go on.
  const uint64_t before_flood = server.stats().accepted;
  std::vector<int> flood;
  for (int i = 0; i < 3 * options.max_connections; ++i) {
    int fd = Connect(port);
    ASSERT_GE(fd, 0);
    flood.push_back(fd);
  }
  ASSERT_TRUE(WaitUntil([&] { return server.stats().accepted >= before_flood + flood.size(); }))
      << "the server did not take the whole flood";
  EXPECT_GT(server.stats().dropped_when_full, 0u);
  EXPECT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK") << "probe lost in the flood";
  stop = true;
  for (auto& t : scrapers) t.join();

  HttpServer::Stats st = server.stats();
  EXPECT_LE(st.max_open_connections, options.max_connections);
  EXPECT_LE(st.open_connections, options.max_connections);
  EXPECT_EQ(scrape.max_in_flight(), 1) << "two scrape computations ran at once";
  for (int fd : slow_readers) close(fd);
  for (int fd : flood) close(fd);
}

// Scrapers arriving while one computation runs wait for it and all get its answer; those
// within fresh_for after it get the same text without another computation.
TEST(HttpServerTest, ScrapesDuringAComputationAndWithinFreshForShareOneComputation) {
  GatedScrape scrape(1000);
  HttpServer server(HttpServer::Options{}, Probes, Route(scrape, std::chrono::hours(1)));
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back([&] {
      std::string r = HttpGet(server.port(), "/metrics");
      if (StatusLine(r) == "HTTP/1.1 200 OK" && Body(r) == scrape.body()) ++ok;
    });
  }
  ASSERT_TRUE(scrape.WaitEntered());
  scrape.Open();
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 5);
  std::string again = HttpGet(server.port(), "/metrics");
  EXPECT_EQ(Body(again), scrape.body());
  HttpServer::Stats st = server.stats();
  EXPECT_EQ(st.computations, 1u);
  EXPECT_GE(st.served_from_cache, 1u);
}

// A client that asks for the big answer and never reads it is dropped when its time is up,
// and its slot and buffer with it.
TEST(HttpServerTest, SlowReaderIsDroppedAtTheRequestTimeout) {
  GatedScrape scrape(4 << 20);
  scrape.Open();
  HttpServer::Options options;
  options.request_timeout = 300ms;
  options.send_buffer_bytes = 4096;
  HttpServer server(options, Probes, Route(scrape, 0ms));
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  SendGet(fd, "/metrics");
  ASSERT_TRUE(WaitUntil([&] { return server.stats().computations == 1; }));
  EXPECT_TRUE(WaitUntil([&] {
    HttpServer::Stats st = server.stats();
    return st.dropped_at_timeout == 1 && st.open_connections == 0;
  })) << "the slow reader was never dropped";
  close(fd);
  EXPECT_EQ(StatusLine(HttpGet(server.port(), "/livez")), "HTTP/1.1 200 OK");
}

TEST(HttpServerTest, AFailingComputationAnswers500AndTheServerStaysUp) {
  HttpServer server(HttpServer::Options{}, Probes,
                    HttpServer::CachedRoute{"/metrics", "text/plain", 0ms, []() -> std::string {
                                              throw std::runtime_error("counter read exploded");
                                            }});
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  std::string r = HttpGet(server.port(), "/metrics");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 500 Internal Server Error") << r;
  EXPECT_EQ(StatusLine(HttpGet(server.port(), "/livez")), "HTTP/1.1 200 OK");
}

TEST(HttpServerTest, RequestLargerThanTheBoundIsRefused) {
  HttpServer::Options options;
  options.max_request_bytes = 1024;
  HttpServer server(options, Probes);
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  int fd = Connect(server.port());
  ASSERT_GE(fd, 0);
  std::string req = "GET /livez HTTP/1.1\r\nX: " + std::string(4096, 'a');
  (void)!write(fd, req.data(), req.size());
  std::string out;
  std::array<char, 4096> buf{};
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) out.append(buf.data(), static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(StatusLine(out), "HTTP/1.1 431 Request Header Fields Too Large");
}

}  // namespace
}  // namespace rdmak8s::node
