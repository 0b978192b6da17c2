"""Where the module's symbols bind at run time: libstdc++'s own symbols must come from libstdc++.

torch's wheels carry and export pieces of libstdc++ of their own (std::ostringstream's
constructor in libtorch.so and libc10.so, std::exception_ptr's reference counting in
libtorch_cpu.so). A module that lists torch's libraries before libstdc++ binds those to torch's
copies, so one object is run by two builds of the library (docs/python.md, "Engine errors").
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

PROGRAM = textwrap.dedent("""
    import torch, mtc
    t = torch.ones(3)
    assert mtc.start_copy({"a": [t]}, "cpu").get()["a"][0] is t
    try:
        mtc._C.start_copy([t], "cpu", True, True, 0, 1 << 25, True, False, False)
    except ValueError as error:
        assert "got 0" in str(error)
""")


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="LD_DEBUG is glibc's dynamic linker's")
def test_the_cxx_runtime_does_not_bind_to_torchs_copies(tmp_path):
    torch_lib = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib"))
    log = tmp_path / "bindings"
    env = dict(os.environ, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(log))
    subprocess.run([sys.executable, "-c", PROGRAM], env=env, check=True, timeout=120)
    module_bindings = []
    for path in tmp_path.iterdir():
        for line in path.read_text(errors="replace").splitlines():
            if "binding file" in line and "/mtc/_C." in line.split(" to ")[0]:
                module_bindings.append(line)
    assert module_bindings, "LD_DEBUG logged no binding of mtc._C"
    wrong = []
    for line in module_bindings:
        target = line.split(" to ", 1)[1]
        symbol = line.rsplit("`", 1)[1].split("'", 1)[0]
        bound_to = target.split(" ")[0]
        if symbol.startswith(RUNTIME_PREFIXES) and os.path.dirname(os.path.realpath(bound_to)) == torch_lib:
            wrong.append(f"{symbol} -> {bound_to}")
    assert not wrong, "C++ runtime symbols bound to torch's copies:\n" + "\n".join(wrong)
