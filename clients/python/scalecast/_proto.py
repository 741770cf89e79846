"""Locates and imports the gRPC stubs generated at build time from proto/.

The stubs are never committed: the build (clients/python/CMakeLists.txt) runs protoc with the
grpc_python_plugin into ``<build>/clients/python/gen``, giving the packages
``proto.scalecast.v1.scalecast_pb2`` (and ``_pb2_grpc``, and ``options_pb2``: the custom field
options the scenario keywords come from) and ``proto.grpc.health.v1.health_pb2``.
They are found, in this order:

1. already importable (the gen directory is on ``sys.path``/``PYTHONPATH``);
2. the directory named by the ``SCALECAST_PY_GEN`` environment variable;
3. ``scalecast/_gen`` inside this package: where an installed copy keeps them (``cmake --install``
   and ``setup.py`` put them there);
4. ``<repo>/build*/clients/python/gen`` next to this source tree (the most recently built one),
   which the build marks with a ``scalecast_gen.stamp`` file.
"""

from __future__ import annotations

import glob
import importlib
import os
import sys
from types import ModuleType

GEN_ENV = "SCALECAST_PY_GEN"
_STAMP = "scalecast_gen.stamp"


def _candidates() -> list[str]:
    out: list[str] = []
    env = os.environ.get(GEN_ENV, "")
    if env:
        out.append(env)
    out.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gen"))
    # clients/python/scalecast/_proto.py -> the repository root is three levels up.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    found = glob.glob(os.path.join(root, "build*", "clients", "python", "gen", _STAMP))
    found.sort(key=os.path.getmtime, reverse=True)
    out.extend(os.path.dirname(f) for f in found)
    return out


def _import_all() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType, ModuleType]:
    return (
        importlib.import_module("proto.scalecast.v1.scalecast_pb2"),
        importlib.import_module("proto.scalecast.v1.options_pb2"),
        importlib.import_module("proto.scalecast.v1.scalecast_pb2_grpc"),
        importlib.import_module("proto.grpc.health.v1.health_pb2"),
        importlib.import_module("proto.grpc.health.v1.health_pb2_grpc"),
    )


def _load() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType, ModuleType]:
    try:
        return _import_all()
    except ImportError:
        pass
    tried: list[str] = []
    for path in _candidates():
        if not os.path.isfile(os.path.join(path, "proto", "scalecast", "v1", "scalecast_pb2.py")):
            tried.append(path + " (no stubs there)")
            continue
        # A failed import may have cached a half-found `proto` package (e.g. a namespace package
        # over the source tree's proto/ directory): forget it before retrying.
        for name in [m for m in sys.modules if m == "proto" or m.startswith("proto.")]:
            del sys.modules[name]
        sys.path.insert(0, path)
        try:
            return _import_all()
        except ImportError as e:
            sys.path.remove(path)
            tried.append(f"{path} ({e})")
    raise ImportError(
        "scalecast: the generated gRPC stubs were not found. Build them "
        "(ninja -C <build> scalecast_python_stubs) and put <build>/clients/python/gen on "
        f"PYTHONPATH or in ${GEN_ENV}. Tried: " + ("; ".join(tried) or "nothing"))


pb, options_pb, pb_grpc, health_pb, health_pb_grpc = _load()
