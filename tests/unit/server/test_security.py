import pytest

from hearth.server.listeners import ENDPOINT_SCOPE_KEY
from hearth.server.options import is_loopback
from hearth.server.security import Access, AccessControl, AccessPolicy, bearer_token, host_is_local

TOKEN, KEY = "app-token", "hk-user"


def test_bearer_token_parsing():
    assert bearer_token([(b"authorization", b"Bearer abc")]) == "abc"
    assert bearer_token([(b"authorization", b"bearer  abc ")]) == "abc"
    assert bearer_token([(b"authorization", b"Basic abc")]) is None
    assert bearer_token([(b"x-api-key", b"k1")]) == "k1"
    assert bearer_token([]) is None


# Who gets in, per (policy, route, credential). Columns: endpoint_open, require_key,
# loopback_only, admin_token, path, presented -> expected.
POLICY_TABLE = [
    # The app's token opens every route, whatever the endpoint says.
    (False, False, True, TOKEN, "/v1/models", TOKEN, Access.ALLOW),
    (True, True, False, TOKEN, "/v1/models", TOKEN, Access.ALLOW),
    (True, False, True, TOKEN, "/hearth/v1/status", TOKEN, Access.ALLOW),
    # Endpoint off: nothing but the token, not even a user key.
    (False, False, True, TOKEN, "/v1/models", None, Access.ENDPOINT_OFF),
    (False, True, True, TOKEN, "/v1/models", KEY, Access.ENDPOINT_OFF),
    # Endpoint on, loopback, no key required: anyone local.
    (True, False, True, TOKEN, "/v1/models", None, Access.ALLOW),
    (True, False, True, TOKEN, "/v1/chat/completions", "junk", Access.ALLOW),
    # ... but admin routes still need the token, never a user key.
    (True, False, True, TOKEN, "/hearth/v1/status", None, Access.NEED_TOKEN),
    (True, True, True, TOKEN, "/hearth/v1/access", KEY, Access.NEED_TOKEN),
    # Require a key: user keys get in, nothing else does.
    (True, True, True, TOKEN, "/v1/models", KEY, Access.ALLOW),
    (True, True, True, TOKEN, "/v1/models", None, Access.NEED_KEY),
    (True, True, True, TOKEN, "/v1/models", "hk-wrong", Access.NEED_KEY),
    # LAN: a key is required even when require_key is off.
    (True, False, False, TOKEN, "/v1/models", None, Access.NEED_KEY),
    (True, False, False, TOKEN, "/v1/models", KEY, Access.ALLOW),
    # Headless `hearth serve` (no token): admin routes follow the endpoint's rule.
    (True, False, True, None, "/hearth/v1/status", None, Access.ALLOW),
    (True, True, True, None, "/hearth/v1/status", None, Access.NEED_KEY),
    (True, True, True, None, "/hearth/v1/status", KEY, Access.ALLOW),
]


@pytest.mark.parametrize(
    ("endpoint_open", "require_key", "loopback", "token", "path", "presented", "expected"),
    POLICY_TABLE,
)
def test_policy_table(endpoint_open, require_key, loopback, token, path, presented, expected):
    policy = AccessPolicy(
        admin_token=token,
        user_keys=(KEY,),
        endpoint_open=endpoint_open,
        require_key=require_key,
        loopback_only=loopback,
    )
    assert policy.decide(path, presented) is expected


def test_the_token_is_never_a_user_key_and_no_keys_means_nobody_when_required():
    policy = AccessPolicy(admin_token=TOKEN, user_keys=(), require_key=True)
    assert policy.decide("/v1/models", TOKEN) is Access.ALLOW  # as the app, not as a key
    assert policy.decide("/v1/models", None) is Access.NEED_KEY
    assert policy.decide("/v1/models", "") is Access.NEED_KEY
    assert not AccessPolicy(user_keys=(), loopback_only=False).accepts(None)
    assert AccessPolicy().accepts(None)


def test_the_endpoint_listener_has_its_own_policy():
    """The app's private listener stays token-only; the endpoint listener's requests are
    judged by the endpoint policy, and refused while it is closed."""
    private = AccessPolicy(admin_token=TOKEN, endpoint_open=False, allowed_origins=("http://a",))
    control = AccessControl(private)
    tagged = {ENDPOINT_SCOPE_KEY: True}
    assert control.policy_for({}) is private
    assert control.policy_for(tagged).decide("/v1/models", None) is Access.ENDPOINT_OFF
    control.set_endpoint(AccessPolicy(admin_token=TOKEN, user_keys=("k",), loopback_only=False))
    endpoint = control.policy_for(tagged)
    assert endpoint.decide("/v1/models", None) is Access.NEED_KEY  # the network: a key
    assert endpoint.decide("/v1/models", "k") is Access.ALLOW
    assert endpoint.allowed_origins == ("http://a",)  # origins come from the launch
    assert control.policy_for({}).decide("/v1/models", "k") is Access.ENDPOINT_OFF
    control.set_endpoint(None)
    assert control.policy_for(tagged).decide("/v1/models", "k") is Access.ENDPOINT_OFF


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
