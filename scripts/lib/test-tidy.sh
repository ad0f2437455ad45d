# make test's tidy stage (scripts/test.sh sources it in a process group of its own; arguments: the
# compiler launcher flags for configure). The asan build's compilation database: clang's own flags
# (without its precompiled headers: scripts/lib/tidy_units.py says why), and the generated
# protobuf headers the sources include.
bash scripts/configure.sh asan "$@" &&
  cmake --build --preset asan --target rdmak8s_node_proto_gen rdmak8s_dp_proto_gen rdmak8s_dra_proto_gen >/dev/null &&
  bash scripts/tidy.sh build/asan ci
