"""The pieces both halves of the OpenAPI document answer with: error bodies, pages and headers."""

ERROR = {"application/json": {"schema": "ErrorEnvelope"}}
PAGE = {"text/html": {"schema": {"type": "string"}}}
CHALLENGE = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "RFC 6750 challenge"}}
RETRY = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds until it may work"}}
NO_STORE = {
    "Cache-Control": {"required": True, "schema": {"const": "no-store"}, "description": "never stored by any cache"}
}
LOCATION = {"Location": {"schema": {"type": "string"}, "description": "where the browser goes next"}}


def error(description: str, headers: dict | None = None) -> dict:
    """A response with the error envelope `{"error": {"code", "message"}}`."""
    return {"description": description, "content": ERROR, **({"headers": headers} if headers else {})}


def page(description: str, headers: dict | None = None) -> dict:
    """A response with an HTML page for the browser (the sign-in routes the user sees)."""
    return {"description": description, "content": PAGE, **({"headers": headers} if headers else {})}


def private(responses: dict) -> dict:
    """`responses`, each declaring `Cache-Control: no-store`."""
    return {
        status: {**response, "headers": {**response.get("headers", {}), **NO_STORE}}
        for status, response in responses.items()
    }
