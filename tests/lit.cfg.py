# lit configuration for tilec: lit/ (FileCheck tests) and diag/ (golden .err).
import os
import shutil
import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tile", ".tir"]
config.excludes = ["inputs", "Inputs", "fuzz", "perf", "products"]   # tests/perf: kernels the benchmarks time; tests/products: kernels products_ptxas.sh compiles
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tilec_obj_root, "tests")

config.substitutions.append(("%tilec", config.tilec_bin))
config.substitutions.append(("%examples", os.path.join(config.tilec_src_root, "examples")))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_bin_dir, os.path.dirname(config.tilec_bin), config.environment.get("PATH", "")])

# ptxas proves each arch's PTX assembles; tests that need it say
# `REQUIRES: ptxas` and are reported UNSUPPORTED (not passed) without it.
ptxas = shutil.which("ptxas") or (os.path.exists("/usr/local/cuda/bin/ptxas") and "/usr/local/cuda/bin/ptxas")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found (no CUDA toolkit): tests marked REQUIRES: ptxas are skipped")
