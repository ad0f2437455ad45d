#include "rdmak8s/device/roce_gid.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

namespace rdmak8s {

bool ParseGid(const std::string& text, unsigned char out[16]) {
  return inet_pton(AF_INET6, text.c_str(), out) == 1;
}

std::string GidForIp(const std::string& ip) {
  unsigned char b[16] = {0};
  unsigned char v4[4];
  if (inet_pton(AF_INET, ip.c_str(), v4) == 1) {
    b[10] = 0xff;
    b[11] = 0xff;
    std::copy(v4, v4 + 4, b + 12);
  } else if (inet_pton(AF_INET6, ip.c_str(), b) != 1) {
    return "";
  }
  char s[40];
  std::snprintf(s, sizeof s, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return s;
}

}  // namespace rdmak8s
