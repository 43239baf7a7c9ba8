"""The Profile & Poke API under /api/v1: routes, schemas, the access guard and the OpenAPI document."""
