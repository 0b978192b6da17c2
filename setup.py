"""Builds the Python module mtc._C with the project's CMake (only the engine and the module).

    pip install --no-build-isolation .

The build uses the torch installed in the running Python, so the module matches its ABI.
Environment: MTC_PYTHON_BUILD_DIR (default build-python), MTC_JOBS (default: all cores),
TORCH_CUDA_ARCH_LIST (default: the project's, Ampere and Hopper), CMAKE_*_COMPILER_LAUNCHER.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(mtc\s+VERSION\s+([0-9.]+)", text)
    if match is None:
        raise RuntimeError("setup.py: no 'project(mtc VERSION x.y.z)' in CMakeLists.txt")
    return match.group(1)


def torch_requirement() -> str:
    import torch

    return "torch==" + torch.__version__.split("+")[0]


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        import torch

        build_dir = Path(os.environ.get("MTC_PYTHON_BUILD_DIR", ROOT / "build-python")).resolve()
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DMTC_BUILD_PYTHON=ON", "-DMTC_BUILD_BENCH=OFF", "-DMTC_BUILD_TESTS=OFF",
            "-DMTC_BUILD_MICROBENCH=OFF",
            f"-DMTC_PYTHON_OUTPUT_DIR={target.parent}",
            f"-DMTC_PYTHON_EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX')}",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        jobs = os.environ.get("MTC_JOBS", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "mtc_python", "-j", jobs], check=True)
        if not target.exists():
            raise RuntimeError(f"setup.py: CMake did not write {target}")


(ROOT / "build-python").mkdir(exist_ok=True)

setup(
    version=project_version(),
    install_requires=[torch_requirement()],
    packages=["mtc"],
    package_dir={"": "src/python"},
    package_data={"mtc": ["py.typed", "*.pyi"]},
    ext_modules=[CMakeExtension("mtc._C")],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own build folder would land in build/, the CMake build of the project.
    options={"build": {"build_base": "build-python/setuptools"}, "egg_info": {"egg_base": "build-python"}},
    zip_safe=False,
)
