from hearth.server.options import is_loopback
from hearth.server.security import AccessPolicy, bearer_token, host_is_local


def test_bearer_token_parsing():
    assert bearer_token([(b"authorization", b"Bearer abc")]) == "abc"
    assert bearer_token([(b"authorization", b"bearer  abc ")]) == "abc"
    assert bearer_token([(b"authorization", b"Basic abc")]) is None
    assert bearer_token([(b"x-api-key", b"k1")]) == "k1"
    assert bearer_token([]) is None


def test_policy_without_keys_accepts_everyone_and_with_keys_only_them():
    assert AccessPolicy().accepts(None)
    policy = AccessPolicy(keys=("k1", "k2"))
    assert policy.accepts("k2")
    assert not policy.accepts("k3")
    assert not policy.accepts(None)


def test_host_header_must_be_local():
    assert host_is_local([(b"host", b"127.0.0.1:8677")])
    assert host_is_local([(b"host", b"localhost")])
    assert host_is_local([(b"host", b"[::1]:8677")])
    assert host_is_local([(b"host", b"app.localhost:1")])
    assert not host_is_local([(b"host", b"evil.example:8677")])
    assert not host_is_local([(b"host", b"127.0.0.1.evil.example")])


def test_loopback_detection():
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.4")
