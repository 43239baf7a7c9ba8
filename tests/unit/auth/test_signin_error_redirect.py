"""Where a declined silent sign-in sends the browser: its return_to with signin_error=<code> in the
query, whatever query and fragment return_to already has."""

import pytest

from app.auth.flow import with_signin_error


@pytest.mark.parametrize(
    ("return_to", "expected"),
    [
        ("/", "/?signin_error=login_required"),
        ("/people?tab=2", "/people?tab=2&signin_error=login_required"),
        ("/?signin_error=old&a=1", "/?a=1&signin_error=login_required"),
        ("/p?signin_error=x&signin_error=y", "/p?signin_error=login_required"),
        ("/p?a=&b=2#part", "/p?a=&b=2&signin_error=login_required#part"),
    ],
)
def test_signin_error_is_added_to_return_to_replacing_any_there(return_to, expected):
    assert with_signin_error(return_to, "login_required") == expected
