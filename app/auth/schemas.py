"""marshmallow schema of the SPA code-exchange request."""

from marshmallow import RAISE, Schema, fields, validate


class ExchangeRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    code = fields.String(required=True, validate=validate.Length(min=1, max=2048))
    code_verifier = fields.String(required=True, validate=validate.Regexp(r"[A-Za-z0-9\-._~]{43,128}"))
    redirect_uri = fields.String(required=True, validate=validate.Length(min=1, max=2048))
    nonce = fields.String(load_default=None, validate=validate.Length(min=1, max=512))
