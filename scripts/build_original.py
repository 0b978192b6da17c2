#!/usr/bin/env python3
"""Builds the original package, accvlab.multi_tensor_copier (part of NVIDIA's ACCV-Lab), from its
source folder, so that `scripts/bench_python.py --original` can time it in the same process as
mtc. Nothing of it is kept in this tree: SRC is a checkout the user made.

    python3 scripts/build_original.py SRC OUT

SRC is the package's folder in a checkout of its repository (the folder that holds
accvlab/multi_tensor_copier/, its csrc/ and its setup.py); OUT is a folder to build into. Put OUT
on PYTHONPATH afterwards. The package's own setup.py takes its compiler flags from the
repository's build-configuration package; this builds the same one extension,
accvlab.multi_tensor_copier._ext, from the same sources with torch's CUDAExtension at -O3, so
that the folder alone is enough (the GPU host has no network to install more). Like mtc's own
module, the extension takes the C++ runtime from the shared libstdc++ (cmake/MtcSharedLibstdcxx.cmake
says why: the GPU host's compiler would otherwise link a static copy of its own).

Exit codes: 0 built and importable; 1 the build or the import failed; 2 bad arguments.
"""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python_on_path import run_with_path  # noqa: E402

PACKAGE = Path("accvlab/multi_tensor_copier")
MODULE = "accvlab.multi_tensor_copier"


def fail(message, code):
    print(f"build_original.py: {message}", file=sys.stderr)
    return code


def build(src, out):
    # Imported here: `--help` and argument errors need no torch.
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    sources = sorted(str(p) for p in (src / PACKAGE / "csrc").glob("*.cpp"))
    extension = CUDAExtension(
        name=f"{MODULE}._ext",
        sources=sources,
        extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3"]},
        define_macros=[("TORCH_EXTENSION_NAME", "_ext")],
        extra_link_args=["-Wl,--push-state,--no-as-needed", "-l:libstdc++.so.6", "-Wl,--pop-state"],
    )
    setup(
        name="accvlab-multi-tensor-copier-for-timing",
        ext_modules=[extension],
        cmdclass={"build_ext": BuildExtension},
        script_args=["-q", "build_ext", "--build-lib", str(out), "--build-temp", str(out / "build-temp")],
    )


def main(argv):
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) != 2:
        return fail("usage: python3 scripts/build_original.py SRC OUT", 2)
    src, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    if not (src / PACKAGE / "__init__.py").is_file() or not any((src / PACKAGE / "csrc").glob("*.cpp")):
        return fail(f"{src} holds no {PACKAGE}/__init__.py and {PACKAGE}/csrc/*.cpp: "
                    "give the package's folder in a checkout of its repository", 2)
    target = out / PACKAGE
    target.mkdir(parents=True, exist_ok=True)
    for source in (src / PACKAGE).glob("*.py"):
        shutil.copy2(source, target / source.name)
    try:
        build(src, out)
    except (SystemExit, Exception) as error:  # setuptools reports a failed compile as SystemExit
        return fail(f"the build failed: {error}", 1)
    # As the package itself does, torch first: the extension links torch's libraries.
    ok, printed, last = run_with_path(out, f"import torch, {MODULE} as m; print(m.__file__)")
    if not ok:
        return fail(f"built, but {MODULE} does not import: {last}", 1)
    print(f"built {MODULE} into {out} ({printed}); put {out} on PYTHONPATH")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
