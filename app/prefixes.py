"""The URL prefixes of the API and of the backend-for-frontend, written here and only here."""

API_PREFIX = "/api/v1"
AUTH_PREFIX = "/auth"
# The provider calls this one server to server (Back-Channel Logout): no cookie, no session, no CSRF header.
BACKCHANNEL_LOGOUT_PATH = f"{AUTH_PREFIX}/backchannel-logout"
