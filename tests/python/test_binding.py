"""Where the module's symbols bind at run time: libstdc++'s own symbols must come from libstdc++.

Two ways to get this wrong, both seen (docs/python.md, "Engine errors"):
- a toolchain that ships only libstdc++.a (the GPU host's /opt/gcc) puts a static copy of the
  runtime inside the module, where formatting an engine error's integer crashed the interpreter;
  its runtime symbols then bind to the module itself;
- torch's wheels export pieces of libstdc++ of their own (std::ostringstream's constructor in
  libtorch.so and libc10.so, std::exception_ptr's reference counting in libtorch_cpu.so); a
  module that lists torch's libraries before libstdc++ binds those to torch's copies.
"""

import os
import platform
import subprocess
import sys
import textwrap

import pytest
import torch

# Itanium-mangled names that belong to the C++ runtime: members of std (a nested name that
# starts with a standard abbreviation: St, Sa, Sb, Ss, Si, So, Sd), std functions, the vtables,
# VTTs and type infos of std classes, and the ABI's own functions.
RUNTIME_PREFIXES = ("_ZNS", "_ZNKS", "_ZS", "_ZTVS", "_ZTVNS", "_ZTTS", "_ZTTNS", "_ZTIS",
                    "_ZTINS", "_ZTSS", "_ZTSNS", "_Znw", "_Zna", "_Zdl", "_Zda", "__cxa_",
                    "_Unwind_")

# Functions only libstdc++ itself defines (never a template the module may instantiate inline):
# found inside the module, they are a static copy of the runtime.
OWN_RUNTIME = ("_ZNSt15__exception_ptr", "_ZSt17rethrow_exception", "_ZNSt6locale", "_ZNKSt6locale",
               "_ZNSt8ios_base", "__cxa_")

PROGRAM = textwrap.dedent("""
    import torch, mtc
    t = torch.ones(3)
    assert mtc.start_copy({"a": [t]}, "cpu").get()["a"][0] is t
    try:
        mtc.start_copy([t], "cpu", min_packed_alignment_bytes=0)
    except ValueError as error:
        assert "got 0" in str(error)
    else:
        raise AssertionError("the engine did not raise")
""")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="LD_DEBUG is glibc's dynamic linker's")
def test_the_cxx_runtime_comes_from_libstdcxx(tmp_path):
    torch_lib = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib"))
    log = tmp_path / "bindings"
    env = dict(os.environ, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(log))
    # Not check=True: where the symbols bound says more than a crash, so it is judged first.
    child = subprocess.run([sys.executable, "-c", PROGRAM], env=env, timeout=120)
    module_bindings = []
    for path in tmp_path.iterdir():
        for line in path.read_text(errors="replace").splitlines():
            if "binding file" in line and "/mtc/_C." in line.split(" to ")[0]:
                module_bindings.append(line)
    assert module_bindings, "LD_DEBUG logged no binding of mtc._C"
    wrong = []
    for line in module_bindings:
        source = line.split("binding file ", 1)[1].split(" ", 1)[0]
        target = line.split(" to ", 1)[1]
        symbol = line.rsplit("`", 1)[1].split("'", 1)[0]
        bound_to = target.split(" ")[0]
        if not symbol.startswith(RUNTIME_PREFIXES):
            continue
        if os.path.dirname(os.path.realpath(bound_to)) == torch_lib:
            wrong.append(f"{symbol} -> torch's copy in {bound_to}")
        elif os.path.realpath(bound_to) == os.path.realpath(source) and symbol.startswith(OWN_RUNTIME):
            wrong.append(f"{symbol} -> the module's own copy of libstdc++")
    assert not wrong, "C++ runtime symbols bound outside libstdc++:\n" + "\n".join(wrong[:20])
    assert child.returncode == 0, f"the program failed (exit {child.returncode})"
