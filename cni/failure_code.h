// FailureCode: the CNI error code (cni/spec.h, docs/cni.md "Errors") that goes with the Status an
// invocation fails with. A Status carries the cause, not the spec's code: the room that decides a
// failure records its code here (Fail), the layers above pass the Status up, and the command
// answers with the code recorded last. One per invocation, shared by reference by its rooms
// (cni/device_resolver.h, qos_changes.h, mover.h, gid_waiter.h). Not thread safe: an invocation
// runs on one thread.
#pragma once

#include "cni/spec.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

class FailureCode {
 public:
  // Records `code` and returns `s` unchanged: `return failure.Fail(kErrWiring, s);`.
  Status Fail(int code, Status s) {
    code_ = code;
    return s;
  }
  int code() const { return code_; }
  void set(int code) { code_ = code; }

 private:
  int code_ = kErrIo;  // a failure no room coded is an I/O error
};

}  // namespace rdmak8s::cni
