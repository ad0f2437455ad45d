// LD_PRELOAD shim for the e2e VM: binds a wildcard rdma_cm bind (INADDR_ANY) to the IPv4 address in
// E2E_RDMA_BIND_ADDR instead.
//
// Why: Debian 12's perftest (4.5-0.17) binds its rdma_cm server (-R) to the wildcard address and
// ignores --source_ip there (later perftest releases honour it). rdma_cm turns a wildcard listen
// into one listen per RDMA device, and siw opens one kernel TCP listener per device in the
// listener's network namespace: with two siw devices on the node (RDMA netns mode shared), the
// second bind fails with EADDRINUSE ("cma_listen_on_dev, error -98") and the server exits. Binding
// the pod's own address, as rping -a does, is what a real iWARP server in a pod would do.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) {
  static int (*real_bind)(struct rdma_cm_id *, struct sockaddr *);
  if (real_bind == NULL) {
    real_bind = (int (*)(struct rdma_cm_id *, struct sockaddr *))dlsym(RTLD_NEXT, "rdma_bind_addr");
    if (real_bind == NULL) return -1;
  }
  const char *want = getenv("E2E_RDMA_BIND_ADDR");
  if (want != NULL && addr != NULL && addr->sa_family == AF_INET) {
    struct sockaddr_in sin;
    memcpy(&sin, addr, sizeof(sin));
    if (sin.sin_addr.s_addr == htonl(INADDR_ANY) && inet_pton(AF_INET, want, &sin.sin_addr) == 1) {
      return real_bind(id, (struct sockaddr *)&sin);
    }
  }
  return real_bind(id, addr);
}
