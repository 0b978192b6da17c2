"""scripts/build_original.py: builds a package laid out as the original's (accvlab/multi_tensor_copier
with its csrc/) into a folder that imports, and refuses a folder that is not one, saying so."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_original.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def test_a_folder_without_the_package_exits_2_naming_it(tmp_path):
    result = run(tmp_path, tmp_path / "out")
    assert result.returncode == 2
    assert str(tmp_path) in result.stderr and "accvlab/multi_tensor_copier" in result.stderr
    assert not (tmp_path / "out").exists()


def test_wrong_argument_count_exits_2_with_usage():
    result = run("only-one")
    assert result.returncode == 2 and "usage:" in result.stderr


def test_a_package_laid_out_as_the_original_builds_and_imports(tmp_path):
    # A stand-in: the same layout and extension name, a few lines of pybind11 instead of the
    # original's source (none of which is in this tree).
    package = tmp_path / "src" / "accvlab" / "multi_tensor_copier"
    (package / "csrc").mkdir(parents=True)
    (package / "__init__.py").write_text("import torch\nfrom . import _ext\n\ndef answer():\n    return _ext.answer()\n")
    (package / "csrc" / "stand_in.cpp").write_text(textwrap.dedent("""
        #include <pybind11/pybind11.h>
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("answer", [] { return 42; }); }
    """))
    out = tmp_path / "out"
    result = run(tmp_path / "src", out)
    assert result.returncode == 0, result.stderr[-3000:]
    check = subprocess.run([sys.executable, "-c", "import accvlab.multi_tensor_copier as m; print(m.answer())"],
                           env=dict(os.environ, PYTHONPATH=str(out)), cwd="/", capture_output=True, text=True)
    assert check.stdout.strip() == "42", check.stderr
