// What someone who can write a directory we read from could leave at the path of a file of ours:
// a FIFO (a plain open(2) of it waits for a writer, forever), a symlink to a file elsewhere, a
// file far larger than ours. Tests of the readers (rdmak8s::ReadRegularFile and its callers)
// plant them and check each is refused at once.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace rdmak8s::testing {

inline void PlantFifo(const std::string& path) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << "mkfifo " << path;
}

inline void PlantSymlink(const std::string& target, const std::string& path) {
  ASSERT_EQ(::symlink(target.c_str(), path.c_str()), 0) << "symlink " << path;
}

inline void PlantFile(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string chunk(64 * 1024, 'x');
  for (size_t left = bytes; left > 0;) {
    size_t n = left < chunk.size() ? left : chunk.size();
    out.write(chunk.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
}

// Runs `call` on its own thread and waits for it to return. A reader that opened the FIFO at
// `fifo` without O_NONBLOCK waits for a writer forever; so, should `call` not have returned
// within a generous bound (a safety net, not a measure: a correct reader returns at once), the
// FIFO's write end is opened and closed, which lets such a reader see end of file and return, and
// the test fails saying that it blocked. Returns whether `call` returned by itself.
inline bool ReturnsWithoutBlockingOn(const std::string& fifo, const std::function<void()>& call) {
  std::promise<void> done;
  std::future<void> returned = done.get_future();
  std::thread t([&] {
    call();
    done.set_value();
  });
  const bool by_itself = returned.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!by_itself) {
    int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // the reader is there: does not wait
    if (w >= 0) ::close(w);
    ADD_FAILURE() << "blocked on the FIFO " << fifo << " (opened without O_NONBLOCK)";
  }
  t.join();
  return by_itself;
}

}  // namespace rdmak8s::testing
