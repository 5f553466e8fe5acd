# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GRAPH"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".json"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "fixtures"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.graph_obj_root, "test")
config.substitutions.append(("%src_root", config.graph_src_root))
config.substitutions.append(("%examples", os.path.join(config.graph_src_root, "examples")))
# Fashion-MNIST as JPEG class folders (scripts/fashion-mnist-jpeg.py), made
# once per build tree and shared by the tests that train on images.
config.substitutions.append(("%fashion_jpeg", os.path.join(config.graph_obj_root, "fashion-mnist-jpeg")))
config.substitutions.append(("%fixtures", os.path.join(config.graph_src_root, "test", "frontends", "keras", "fixtures")))

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()
# RUN lines may start with `not` or `FileCheck`: LLVM's tools come from
# /usr/lib/llvm-22/bin, which is not on a Debian PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.graph_tools_dir, config.llvm_tools_dir]
# cpu-kernels is bench/cpu-kernels.cpp (bench/CMakeLists.txt puts it in bin/).
tools = ["graph-opt", "graph-import", "graphc", "graphrun", "fit-callbacks-replay", "plan-learning-rates", "cpu-kernels"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Real Keras 3 and tensorboard (scripts/test-venv.sh, which scripts/setup.sh
# runs): %keras_python is its interpreter, on Keras' numpy backend.
test_venv = os.environ.get("TEST_VENV", os.path.join(config.graph_src_root, "build", "test-venv"))
keras_python = os.path.join(test_venv, "bin", "python")
if os.path.exists(keras_python):
    config.available_features.add("keras")
    config.substitutions.append(("%keras_python", "env KERAS_BACKEND=numpy " + keras_python))

# Network namespaces (root and iproute2): the two-host multi-worker test
# runs one worker in each. Probed once, by making and removing one.
import subprocess
probe = "graph-lit-probe-%d" % os.getpid()
if os.geteuid() == 0 and shutil.which("ip") and subprocess.run(
        ["ip", "netns", "add", probe], capture_output=True).returncode == 0:
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    config.available_features.add("netns")

# AVX-512 (oneDNN's avx512_core: F, BW, VL and DQ): the only CPUs on which
# oneDNN 2.6 computes bfloat16 (GRAPH_CPU_BF16=onednn), natively with
# AVX512-BF16 or AMX, emulated without.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((l.split(":", 1)[1].split() for l in cpuinfo
                      if l.startswith("flags")), [])
except OSError:
    flags = []
if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
    config.available_features.add("avx512")

# The libFuzzer targets, where the build has them (test/CMakeLists.txt).
if config.graph_have_fuzzers:
    config.available_features.add("fuzzers")
# A full disk for the files whose path holds $GRAPH_FULL_DISK
# (test/runtime/job/full-disk.c), through LD_PRELOAD.
config.substitutions.append(("%full_disk", os.path.join(config.graph_obj_root, "lib", "libgraph-full-disk.so")))
config.substitutions.append(("%fuzz_dir", os.path.join(config.graph_obj_root, "fuzz")))

# Multi-worker tests start real workers with Open MPI's mpirun. It refuses
# to run as root without these two, and --oversubscribe lets a test start
# more workers than this machine has cores (graphrun divides a host's cores
# among its workers itself, hence --bind-to none).
if config.graph_have_mpi and shutil.which("mpirun"):
    config.available_features.add("mpi")
    # bench/mpi-allreduce.cpp, built with MPI.
    llvm_config.add_tool_substitutions(["mpi-allreduce"], tool_dirs)
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.substitutions.append(
        ("%mpirun", "mpirun --oversubscribe --bind-to none"))
