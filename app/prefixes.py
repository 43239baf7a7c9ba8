"""The URL prefixes of the API and of the backend-for-frontend, written here and only here."""

API_PREFIX = "/api/v1"
AUTH_PREFIX = "/auth"
