// cni_exec_loop PLUGIN PAIRS NETCONF: execs PLUGIN as a container runtime does (CNI_* from this
// process's environment, CNI_COMMAND set to ADD then DEL, the netconf file on stdin), PAIRS times,
// and prints the figures of issue 11's side-by-side: median and p99 wall of ADD, DEL and ADD+DEL,
// CPU (user+sys) per command and the largest peak RSS, one "NAME VALUE UNIT" line each.
// Exits 1 naming the first command that failed (its exit code and stdout), 2 on usage.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double pct(double* v, int n, double p) {
  qsort(v, (size_t)n, sizeof(double), cmp);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

struct run {
  double wall_ms, cpu_ms;
  long maxrss_kb;
  int status;
  char out[4096];
};

static int exec_one(const char* plugin, const char* command, const char* netconf, struct run* r) {
  int in = open(netconf, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  double t0 = now_ms();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in, 0);
    dup2(out[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    setenv("CNI_COMMAND", command, 1);
    execl(plugin, plugin, (char*)NULL);
    _exit(127);
  }
  close(in);
  close(out[1]);
  size_t got = 0;
  ssize_t k;
  while ((k = read(out[0], r->out + got, sizeof(r->out) - 1 - got)) > 0) got += (size_t)k;
  r->out[got] = 0;
  close(out[0]);
  struct rusage ru;
  int status = 0;
  if (wait4(pid, &status, 0, &ru) < 0) return -1;
  r->wall_ms = now_ms() - t0;
  r->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
              (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  r->maxrss_kb = ru.ru_maxrss;
  r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4 || atoi(argv[2]) <= 0) {
    fprintf(stderr, "usage: cni_exec_loop PLUGIN PAIRS NETCONF\n");
    return 2;
  }
  const char* plugin = argv[1];
  int n = atoi(argv[2]);
  double* add = calloc((size_t)n, sizeof(double));
  double* del = calloc((size_t)n, sizeof(double));
  double* both = calloc((size_t)n, sizeof(double));
  double add_cpu = 0, del_cpu = 0;
  long rss = 0;
  struct run r;
  for (int i = 0; i < n; ++i) {
    const char* cmds[2] = {"ADD", "DEL"};
    for (int c = 0; c < 2; ++c) {
      if (exec_one(plugin, cmds[c], argv[3], &r) != 0) {
        fprintf(stderr, "cni_exec_loop: %s %s: %s\n", cmds[c], plugin, strerror(errno));
        return 1;
      }
      if (r.status != 0) {
        fprintf(stderr, "cni_exec_loop: pair %d: %s exited %d: %s\n", i + 1, cmds[c], r.status, r.out);
        return 1;
      }
      if (c == 0) {
        add[i] = r.wall_ms;
        add_cpu += r.cpu_ms;
      } else {
        del[i] = r.wall_ms;
        del_cpu += r.cpu_ms;
      }
      if (r.maxrss_kb > rss) rss = r.maxrss_kb;
    }
    both[i] = add[i] + del[i];
  }
  printf("pairs %d count\n", n);
  printf("add-median %.2f ms\nadd-p99 %.2f ms\n", pct(add, n, 0.5), pct(add, n, 0.99));
  printf("del-median %.2f ms\ndel-p99 %.2f ms\n", pct(del, n, 0.5), pct(del, n, 0.99));
  printf("add+del-median %.2f ms\n", pct(both, n, 0.5));
  printf("add-cpu-mean %.2f ms\ndel-cpu-mean %.2f ms\n", add_cpu / n, del_cpu / n);
  printf("peak-rss %ld KB\n", rss);
  return 0;
}
