"""The one exception the client raises for a failed call."""

from __future__ import annotations

import grpc


class ScalecastError(Exception):
    """A call failed: ``code`` is the gRPC status code, ``message`` the server's message.

    Raised for every RPC failure (``INVALID_ARGUMENT`` with the field path in the message,
    ``NOT_FOUND`` for an unknown accelerator/preset/profile, ``RESOURCE_EXHAUSTED`` for a sweep
    over the server's limits, ``UNAUTHENTICATED`` for a write without the token,
    ``UNAVAILABLE``/``DEADLINE_EXCEEDED`` for transport trouble), and with ``INVALID_ARGUMENT``
    for arguments the client rejects before sending (an unknown enum name, a bad CSV cell).
    """

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code: grpc.StatusCode = code
        self.message: str = message

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> "ScalecastError":
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        return cls(code or grpc.StatusCode.UNKNOWN, details or "")

    def __reduce__(self):  # picklable, e.g. across multiprocessing
        return (type(self), (self.code, self.message))
