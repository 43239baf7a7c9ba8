"""The query of GET /auth/login in the OpenAPI document: each parameter with the rules
app.auth.schemas checks it by, and the value lists as this app's settings have them."""

from ..auth.flow import MAX_RETURN_TO
from ..auth.schemas import LOCALE, MAX_AGE_LIMIT, PROMPTS

_LISTS = "several values go space-separated (OpenAPI `spaceDelimited`), each once"


def _listed(name: str, items: dict, description: str) -> dict:
    """A query parameter holding distinct space-separated values."""
    return {
        "name": name,
        "in": "query",
        "style": "spaceDelimited",
        "explode": False,
        "schema": {"type": "array", "items": items, "minItems": 1, "uniqueItems": True},
        "description": f"{description}; {_LISTS}",
    }


def login_parameters(acr_values: tuple[str, ...]) -> list[dict]:
    """GET /auth/login's query parameters, `acr_values` only when LOGIN_ACR_VALUES names some."""
    parameters = [
        {
            "name": "return_to",
            "in": "query",
            "schema": {"type": "string"},
            "description": f"where the browser lands after signing in: a path on this origin of at most "
            f"{MAX_RETURN_TO} characters; anything else means `/`",
        },
        _listed("prompt", {"enum": sorted(PROMPTS)}, "what the provider must show; `none` stands alone"),
        {
            "name": "login_hint",
            "in": "query",
            "schema": {"type": "string", "minLength": 1, "maxLength": 256},
            "description": "the account to suggest: 1 to 256 printable characters",
        },
        {
            "name": "max_age",
            "in": "query",
            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_AGE_LIMIT},
            "description": "the oldest acceptable authentication, in whole seconds (ASCII digits)",
        },
        _listed(
            "ui_locales",
            {"type": "string", "pattern": f"^{LOCALE.pattern}$"},
            "BCP 47 language tags for the provider's pages, at most 64 characters in all",
        ),
    ]
    if acr_values:
        parameters.append(_listed("acr_values", {"enum": list(acr_values)}, "how strongly to sign in"))
    return parameters


def login_description(acr_values: tuple[str, ...]) -> str:
    """What GET /auth/login does with its query."""
    refused = "" if acr_values else " `acr_values` is refused: LOGIN_ACR_VALUES names none."
    return (
        "Starts a browser sign-in (Authorization Code + PKCE, through a pushed authorization request when "
        "the provider offers one) and redirects to the provider. A bad value or a parameter sent twice is a "
        "400 page starting `invalid_request: the sign-in parameter <name>`, and nothing is written; other "
        f"query parameters are ignored.{refused}"
    )
