#!/usr/bin/python3
"""cri: the e2e guest's CRI client, as small as a client can be (no Debian release packages crictl).

  cri [--socket PATH] [--timeout S] METHOD [REQUEST.json|-]

Calls runtime.v1 RuntimeService or ImageService METHOD (RunPodSandbox, CreateContainer,
StartContainer, ContainerStatus, ExecSync, StopPodSandbox, RemovePodSandbox, Version, ...) with the
request given as proto JSON (field names or their JSON names; default {}), and prints the answer as
JSON (proto field names). A gRPC error exits 1 with "cri: METHOD: CODE: details" on stderr.
The stubs are compiled from trixie's CRI api.proto at image build (e2e/build-image.sh).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402
import api_pb2  # noqa: E402


def main(argv):
    sock, timeout = "/run/containerd/containerd.sock", 60.0
    args = list(argv)
    while args and args[0].startswith("--"):
        if args[0] == "--socket" and len(args) > 1:
            sock = args[1]
        elif args[0] == "--timeout" and len(args) > 1:
            timeout = float(args[1])
        else:
            print(__doc__, file=sys.stderr)
            return 2
        args = args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    method, src = args[0], (args[1] if len(args) > 1 else None)
    service = None
    for s in api_pb2.DESCRIPTOR.services_by_name.values():
        if method in s.methods_by_name:
            service = s
            break
    if service is None:
        print(f"cri: no CRI method {method}", file=sys.stderr)
        return 2
    m = service.methods_by_name[method]
    req_cls = getattr(api_pb2, m.input_type.name)
    resp_cls = getattr(api_pb2, m.output_type.name)
    text = "{}" if src is None else (sys.stdin.read() if src == "-" else open(src).read())
    try:
        req = json_format.ParseDict(json.loads(text), req_cls())
    except (ValueError, json_format.ParseError) as e:
        print(f"cri: {method}: bad request: {e}", file=sys.stderr)
        return 2
    with grpc.insecure_channel(f"unix://{sock}") as ch:
        call = ch.unary_unary(f"/{service.full_name}/{method}",
                              request_serializer=req_cls.SerializeToString,
                              response_deserializer=resp_cls.FromString)
        try:
            resp = call(req, timeout=timeout)
        except grpc.RpcError as e:
            print(f"cri: {method}: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    print(json_format.MessageToJson(resp, preserving_proto_field_name=True, indent=None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
