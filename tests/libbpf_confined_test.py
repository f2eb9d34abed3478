#!/usr/bin/env python3
"""scripts/check_libbpf_confined.py against made-up trees and link graphs:
it passes a clean one and fails, naming the file or the library and its
chain, each way libbpf can leak out of agent/session/."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                      "check_libbpf_confined.py")

CLEAN_GRAPH = (
    "bpf_skel|INTERFACE_LIBRARY||PkgConfig::LIBBPF\n"
    "agent_tables|STATIC_LIBRARY|unwind_tables|unwind_tables\n"
    "unwind_tables|STATIC_LIBRARY|absl::status|absl::status\n"
    "agent_session|STATIC_LIBRARY|agent_tables,bpf_skel|agent_tables,bpf_skel\n"
    "agent_process|STATIC_LIBRARY|agent_tables|agent_tables\n"
    "agent_sampling|STATIC_LIBRARY|agent_tables|agent_tables\n"
    "agent_record|STATIC_LIBRARY|agent_sampling,agent_process|agent_sampling,agent_process\n"
    "agent_cli|STATIC_LIBRARY|agent_session::@(0x1),agent_record|agent_session::@(0x1),agent_record\n"
)


class CheckLibbpfConfined(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.write("agent/session/bpf_session.cc", "#include <bpf/libbpf.h>\nint f() { return bpf_map__fd(0); }\n")
        self.write("bpf/host/walk_replay.c", "static void *bpf_map_lookup_elem(void *m, const void *k);\n")
        self.write("agent/process/tracker.cc",
                   '// bpf_map_update_elem(fd) is the session\'s\nconst char* s = "bpf_loop (";\n')
        self.write("tests/maps_priv_test.cc", "#include <bpf/bpf.h>\nint g() { return bpf_map_create(0); }\n")
        self.write("link_graph.txt", CLEAN_GRAPH)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def run_check(self):
        r = subprocess.run([sys.executable, SCRIPT, "--source-dir", self.root, "--link-graph",
                            os.path.join(self.root, "link_graph.txt")], capture_output=True, text=True)
        return r.returncode, r.stderr + r.stdout

    def assert_fails_naming(self, expected):
        code, out = self.run_check()
        self.assertEqual(code, 1, out)
        self.assertIn(expected, out)

    def test_clean_tree_passes(self):
        code, out = self.run_check()
        self.assertEqual(code, 0, out)
        self.assertIn("libbpf linked by: agent_cli, agent_session, bpf_skel", out)

    def test_include_outside_session_fails(self):
        self.write("agent/python/tracker.cc", "#include <bpf/bpf.h>\n")
        self.assert_fails_naming("agent/python/tracker.cc:1: includes bpf/bpf.h")

    def test_call_outside_session_fails(self):
        self.write("agent/record/events.cc", "int n() {\n  return ring_buffer__poll(rb, 100);\n}\n")
        self.assert_fails_naming("agent/record/events.cc:2: calls ring_buffer__poll")

    def test_host_walk_may_not_include_libbpf(self):
        self.write("bpf/host/bpf_shim.h", "#include <bpf/libbpf.h>\n")
        self.assert_fails_naming("bpf/host/bpf_shim.h:1: includes bpf/libbpf.h")

    def test_library_linking_libbpf_through_another_fails(self):
        # The recorder holding the BPF session itself again, not its interface.
        self.write("link_graph.txt", CLEAN_GRAPH.replace("agent_record|STATIC_LIBRARY|agent_sampling,",
                                                         "agent_record|STATIC_LIBRARY|agent_session,"))
        self.assert_fails_naming("library agent_record links libbpf: agent_record -> agent_session -> bpf_skel")

    def test_library_linking_the_skeleton_directly_fails(self):
        self.write("link_graph.txt", CLEAN_GRAPH.replace(
            "agent_process|STATIC_LIBRARY|agent_tables|agent_tables",
            "agent_process|STATIC_LIBRARY|agent_tables,bpf_skel|agent_tables"))  # PRIVATE
        self.assert_fails_naming("library agent_process links libbpf: agent_process -> bpf_skel")

    def test_a_graph_without_the_session_is_refused(self):
        self.write("link_graph.txt", "agent_tables|STATIC_LIBRARY||\n")
        self.assert_fails_naming("agent_session missing")


if __name__ == "__main__":
    unittest.main()
