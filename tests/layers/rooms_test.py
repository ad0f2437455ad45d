#!/usr/bin/env python3
"""The first-line check (check_rooms.py) on the product, and on small trees that break each rule,
so a checker that stopped reading files cannot pass the product by accident."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_rooms  # noqa: E402
from layers_test import SOURCE_DIR, tree  # noqa: E402  (one temporary-tree helper for both)


class RoomsTest(unittest.TestCase):
    def test_every_product_room_names_its_job_on_its_first_line(self):
        files = list(check_rooms.checked_files(SOURCE_DIR))
        self.assertGreater(len(files), 200, "the check read almost nothing: wrong root?")
        problems = check_rooms.check(SOURCE_DIR)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_a_header_without_a_leading_comment_is_named(self):
        with tree({"cni/a.h": "#pragma once\n// late comment\n",
                   "cni/b.h": "// B: what b does.\n#pragma once\n"}) as root:
            problems = check_rooms.check(root)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("cni/a.h: a header starts with a // comment", problems[0])

    def test_a_source_may_start_with_its_own_header_but_not_another(self):
        with tree({"node/x.cc": '#include "node/x.h"\n',
                   "node/y.cc": '#include "node/x.h"\n#include "node/y.h"\n',
                   "node/z.cc": "// Z: the z rule.\n#include <vector>\n"}) as root:
            problems = check_rooms.check(root)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("node/y.cc: a source starts with a // comment or the include of its own "
                      "header y.h", problems[0])

    def test_a_script_names_its_job_after_its_shebang(self):
        with tree({"e2e/guest/ok.sh": "#!/bin/bash\n# What ok does.\nset -e\n",
                   "e2e/guest/bare.sh": "#!/bin/bash\nset -e\n",
                   "e2e/guest/empty.sh": "#!/bin/bash\n#\n",
                   "scripts/tool.py": '#!/usr/bin/env python3\n"""What the tool does."""\n'}) as root:
            problems = check_rooms.check(root)
        self.assertEqual(sorted(p.split(":")[0] for p in problems),
                         ["e2e/guest/bare.sh", "e2e/guest/empty.sh"], problems)
        self.assertIn("after its #! line", problems[0])

    def test_tests_and_generated_protos_are_not_rooms(self):
        with tree({"tests/unit/cni/a_test.cc": '#include "cni/a.h"\n',
                   "dra/proto/api.h": "#pragma once\n"}) as root:
            self.assertEqual(check_rooms.check(root), [])


if __name__ == "__main__":
    unittest.main()
