"""Fixtures of the sign-in tests: a stub OpenID provider on loopback with a key made once per module."""

import pytest

from tests.helpers.stub_op import StubOP


@pytest.fixture(scope="module")
def key():
    return StubOP.new_key("op-key-1")  # made once: making RSA keys is slow


@pytest.fixture
def op(key):
    stub = StubOP(key)
    yield stub
    stub.stop()
