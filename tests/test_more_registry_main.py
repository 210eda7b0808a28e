"""`python -m activerag.graphs.registry --markdown`: the README's method table, and a command
line that says what it is and what it needs."""

import subprocess
import sys

from activerag.graphs.registry import markdown_table


def registry(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "activerag.graphs.registry", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_markdown_prints_the_readme_s_method_table(tmp_path):
    done = registry("--markdown", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == markdown_table() + "\n"


def test_without_markdown_it_says_the_flag_is_needed_and_prints_nothing(tmp_path):
    done = registry(cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "the following arguments are required: --markdown" in done.stderr


def test_its_help_says_what_it_prints(tmp_path):
    done = registry("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: python -m activerag.graphs.registry [-h] --markdown")
    assert "The method registry, printed." in done.stdout
