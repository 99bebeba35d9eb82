"""The wheel's contents come from the project's CMake build (pyproject.toml has
the metadata): configured once into $TILEJIT_BUILD_DIR (default build-pip/,
an existing build tree configured with -DTILEJIT_PYTHON=ON serves as is), the
Python target built there, and its package tree (the core library, the
pybind11 module, the Python files) copied into the wheel. Options for a fresh
configure: $TILEJIT_CMAKE_ARGS; parallel jobs: $TILEJIT_BUILD_JOBS.
setuptools' own build and egg-info directories live inside that build tree,
so the source tree stays clean."""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("TILEJIT_BUILD_DIR") or os.path.join(ROOT, "build-pip"))


class CMakeBuildPy(build_py):
    """Builds the package with CMake and copies its tree into build_lib."""

    def run(self):
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            subprocess.check_call(
                ["cmake", "-G", "Ninja", "-S", ROOT, "-B", BUILD, "-DCMAKE_BUILD_TYPE=Release",
                 "-DTILEJIT_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"]
                + shlex.split(os.environ.get("TILEJIT_CMAKE_ARGS", "")))
        jobs = os.environ.get("TILEJIT_BUILD_JOBS")
        subprocess.check_call(["cmake", "--build", BUILD, "--target", "_tilejit"]
                              + (["-j", jobs] if jobs else []))
        package = os.path.join(BUILD, "python", "tilejit")
        if not os.path.exists(os.path.join(package, "__init__.py")):
            sys.exit(f"setup.py: {BUILD} has no Python package (configure it with "
                     "-DTILEJIT_PYTHON=ON)")
        target = os.path.join(self.build_lib, "tilejit")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__"))


class BinaryDistribution(Distribution):
    """The package holds native libraries: a platform wheel."""

    def has_ext_modules(self):
        return True


os.makedirs(os.path.join(BUILD, "setuptools"), exist_ok=True)
setup(cmdclass={"build_py": CMakeBuildPy}, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join(BUILD, "setuptools")},
               "egg_info": {"egg_base": os.path.join(BUILD, "setuptools")}})
