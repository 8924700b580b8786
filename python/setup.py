"""Build hooks of the tilec package; the metadata is in pyproject.toml.

At `pip install` time two environment variables are read:
  TILEC_BUNDLE_LIBS=DIR  copy libtilec.so* and libtilert.so* from DIR into
                         the package (tilec/lib/), so that it runs alone;
  TILEC_PREFIX=DIR       the prefix that `cmake --install` used: recorded in
                         tilec/_install.py, where the package looks for DIR/lib.
"""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "tilec")
        prefix = os.environ.get("TILEC_PREFIX")
        with open(os.path.join(pkg, "_install.py"), "w") as f:
            f.write("# Written by setup.py at installation.\nPREFIX = %r\n"
                    % (os.path.abspath(prefix) if prefix else None))
        libs = os.environ.get("TILEC_BUNDLE_LIBS")
        if libs:
            os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
            found = [p for n in ("libtilec.so*", "libtilert.so*") for p in glob.glob(os.path.join(libs, n))]
            if not found:
                raise SystemExit("TILEC_BUNDLE_LIBS=%s holds no libtilec.so* / libtilert.so*" % libs)
            for p in found:
                # Links are copied as the files they name (the loader asks for the SONAME).
                shutil.copyfile(p, os.path.join(pkg, "lib", os.path.basename(p)))


setup(cmdclass={"build_py": BuildPy})
