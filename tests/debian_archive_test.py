#!/usr/bin/env python3
"""debian_archive.py against apt sources written here: one-line entries with
options, deb822 stanzas (disabled ones, other types and non-Debian suites
skipped), the security archive by suite, and its sibling when the sources
name none."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import debian_archive  # noqa: E402


class DebianArchive(unittest.TestCase):
    def sources(self, one_line="", **parts):
        d = tempfile.mkdtemp()
        os.mkdir(os.path.join(d, "parts"))
        with open(os.path.join(d, "sources.list"), "w") as f:
            f.write(one_line)
        for name, text in parts.items():
            with open(os.path.join(d, "parts", name.replace("_", ".")), "w") as f:
                f.write(text)
        debian_archive._apt_paths = lambda: (os.path.join(d, "sources.list"), os.path.join(d, "parts"))

    def test_one_line_with_options(self):
        self.sources("# a comment\ndeb-src http://src.example/debian bookworm main\n"
                     "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main\n"
                     "deb http://mirror.example/debian-security bookworm-security main\n")
        self.assertEqual(debian_archive.archive_uri(), "http://mirror.example/debian")
        self.assertEqual(debian_archive.security_uri(), "http://mirror.example/debian-security")

    def test_deb822_skips_disabled_and_foreign(self):
        self.sources(a_sources="Types: deb\nURIs: https://deb.nodesource.example/node_20.x\n"
                     "Suites: nodistro\nComponents: main\n\n"
                     "Enabled: no\nTypes: deb\nURIs: http://old.example/debian\nSuites: trixie\n\n"
                     "Types: deb deb-src\nURIs: http://proxy.example:3142/debian\n"
                     "Suites: trixie trixie-updates\nComponents: main\n",
                     b_list_disabled="deb http://never.example/debian trixie main\n")
        self.assertEqual(debian_archive.archive_uri(), "http://proxy.example:3142/debian")
        # No security entry: the main archive's sibling.
        self.assertEqual(debian_archive.security_uri(), "http://proxy.example:3142/debian-security")

    def test_no_debian_source_is_an_error_naming_the_files(self):
        self.sources("deb https://packages.example/apt cloud-sdk main\n")
        with self.assertRaisesRegex(RuntimeError, "no Debian archive.*sources.list"):
            debian_archive.archive_uri()


if __name__ == "__main__":
    unittest.main()
