"""The exception hierarchy mirrors the core's one error type (docs/BINDINGS.md, "Errors")."""

from __future__ import annotations

import weida
from weida._errors import BY_CODE

CODES = [
    "NOT_CONNECTED",
    "CONNECTION_LOST",
    "INDETERMINATE",
    "UNTRUSTED",
    "UNKNOWN_ENDPOINT",
    "UNSUPPORTED",
    "REJECTED",
    "CANCELED",
    "LIMIT_EXCEEDED",
    "TIMEOUT",
    "INVALID_ADDRESS",
    "NEGOTIATION_FAILED",
    "PROTOCOL",
    "INVALID_CONFIG",
    "INVALID_FILTER",
    "CLOSED",
    "IO",
]


def test_one_class_per_core_code_under_the_base_error() -> None:
    assert sorted(BY_CODE) == sorted(CODES)
    for code, cls in BY_CODE.items():
        assert issubclass(cls, weida.WeidaError)
        assert cls.code == code
        assert getattr(weida, cls.__name__) is cls
        assert cls.__doc__


def test_indeterminate_is_not_a_definite_failure() -> None:
    assert not weida.Indeterminate.definite
    assert all(cls.definite for cls in BY_CODE.values() if cls is not weida.Indeterminate)
    for cls in BY_CODE.values():
        if cls is not weida.Indeterminate:
            assert not issubclass(weida.Indeterminate, cls)
    assert weida.Indeterminate.__mro__[1] is weida.WeidaError


def test_every_public_name_has_a_docstring() -> None:
    for name in weida.__all__:
        obj = getattr(weida, name)
        assert obj.__doc__, name
        for attr, member in vars(obj).items() if isinstance(obj, type) else []:
            if not attr.startswith("_") and callable(member):
                assert getattr(member, "__doc__", None), f"{name}.{attr}"


async def test_the_error_raised_carries_code_and_message() -> None:
    rt = weida.Runtime()
    try:
        await rt.pusher().send(b"x")
    except weida.WeidaError as e:
        assert e.code == "NOT_CONNECTED"
        assert "not connected" in str(e)
        assert e.definite
    else:
        raise AssertionError("no error")
