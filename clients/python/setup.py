#!/usr/bin/python3
"""Installs the scalecast Python client from a checkout, offline (Debian 12's setuptools).

    cd clients/python && /usr/bin/python3 setup.py install      # or: pip install --no-build-isolation .

Its gRPC stubs are generated while building, with Debian's protoc and grpc_python_plugin
(protobuf-compiler, protobuf-compiler-grpc), into the package as ``scalecast/_gen``, where
``scalecast._proto`` finds them. Runtime needs: python3-grpcio, python3-protobuf.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository root: proto/ lives there
PROTOS = ["proto/scalecast/v1/options.proto", "proto/scalecast/v1/scalecast.proto",
          "proto/grpc/health/v1/health.proto"]
PACKAGES = ["proto", "proto/scalecast", "proto/scalecast/v1", "proto/grpc", "proto/grpc/health",
            "proto/grpc/health/v1"]


os.chdir(HERE)  # setuptools resolves the paths below from here, wherever it was started


class BuildPyWithStubs(build_py):
    """build_py, then protoc into <build_lib>/scalecast/_gen."""

    def run(self):
        super().run()
        gen = os.path.join(os.path.abspath(self.build_lib), "scalecast", "_gen")
        os.makedirs(gen, exist_ok=True)
        protoc = shutil.which("protoc") or "/usr/bin/protoc"
        plugin = shutil.which("grpc_python_plugin") or "/usr/bin/grpc_python_plugin"
        for tool in (protoc, plugin):
            if not os.path.exists(tool):
                raise SystemExit(f"setup.py: {tool} not found: install protobuf-compiler and "
                                 "protobuf-compiler-grpc (scripts/deps.sh does)")
        subprocess.run([protoc, f"--proto_path={ROOT}", f"--python_out={gen}", f"--grpc_out={gen}",
                        f"--plugin=protoc-gen-grpc={plugin}", *PROTOS], check=True, cwd=ROOT)
        # Regular packages: `proto` then wins over a source tree's proto/ directory on sys.path.
        for pkg in PACKAGES:
            open(os.path.join(gen, pkg, "__init__.py"), "a").close()


setup(
    name="scalecast",
    version="0.1.0",
    description="Client for the scalecast LLM-training performance-prediction service",
    packages=["scalecast"],
    python_requires=">=3.9",
    scripts=["examples/plan_cluster.py"],
    cmdclass={"build_py": BuildPyWithStubs},
)
