# The package's version: CMake's project version (tests/python_install.sh
# checks that they agree; pyproject.toml reads it from here).
__version__ = "0.1.0"
