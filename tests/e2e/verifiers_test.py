#!/usr/bin/env python3
"""The e2e harness's traffic verifiers (e2e/guest/lib.sh verify_perftest) on perftest's output.

  verifiers_test.py VerifiersTest.test_name

A traffic check passes when the client's result row shows every iteration done; the figure beside
it is recorded only when it is a finite positive number. The outputs below have the shape
perftest 4.5 prints (Debian 12), including the "inf" latency a TCG guest's cycle clock gave in CI.
"""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "RDMAK8S_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LIB_SH = os.path.join(SOURCE_DIR, "e2e", "guest", "lib.sh")
LIB_DIR = os.path.join(SOURCE_DIR, "e2e", "guest", "lib")  # its parts, /e2e/lib in the guest

LAT_HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
              "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n")
BW_HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"


class VerifiersTest(unittest.TestCase):
    def verify(self, output, iters, col, unit):
        with tempfile.NamedTemporaryFile("w", suffix=".client", delete=False) as f:
            f.write(output)
            path = f.name
        try:
            p = subprocess.run(
                ["/bin/sh", "-c",
                 f'E2E_LIB_DIR={LIB_DIR}\n. {LIB_SH}\nverify_perftest "$1" {iters} {col} {unit}; rc=$?\n'
                 'printf "%s\\n%s\\n%s\\n" "$rc" "$VERDICT" "$VALUE"', "sh", path],
                capture_output=True, text=True, timeout=30)
        finally:
            os.unlink(path)
        rc, verdict, value = (p.stdout.split("\n") + ["", "", ""])[:3]
        return int(rc), verdict, value

    def test_latency_row_with_a_figure_passes_and_records_it(self):
        out = "---\n" + LAT_HEADER + " 2       300          60.12          300.40       80.23        90.1     5.0   200.0   300.0\n"
        self.assertEqual(self.verify(out, 300, 5, "usec"), (0, "300 iterations, 80.23 usec", "80.23"))

    def test_latency_row_with_inf_passes_without_a_figure(self):
        out = LAT_HEADER + " 2       300          inf          inf       inf        inf     nan   inf   inf\n"
        rc, verdict, value = self.verify(out, 300, 5, "usec")
        self.assertEqual(rc, 0, verdict)
        self.assertIn("no figure", verdict)
        self.assertEqual(value, "")

    def test_fewer_iterations_fail(self):
        out = BW_HEADER + " 65536      0           0.00               0.00   0.000000\n"
        rc, verdict, _ = self.verify(out, 300, 4, "MB/s")
        self.assertEqual(rc, 1)
        self.assertIn("expected 300 iterations", verdict)

    def test_no_result_row_fails(self):
        rc, verdict, _ = self.verify("Couldn't connect to 198.18.0.2:18515\n", 300, 4, "MB/s")
        self.assertEqual(rc, 1)
        self.assertIn("no result row", verdict)

    def test_garbage_figure_fails(self):
        out = BW_HEADER + " 65536      300           12abc               -3   0.000000\n"
        rc, verdict, _ = self.verify(out, 300, 4, "MB/s")
        self.assertEqual(rc, 1, verdict)

    def test_bandwidth_row_passes(self):
        out = BW_HEADER + " 65536      300           17.50               17.44   0.000279\n"
        self.assertEqual(self.verify(out, 300, 4, "MB/s"), (0, "300 iterations, 17.44 MB/s", "17.44"))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
