"""Flask's JSON, byte for byte, with its encoders built once.

Flask's provider calls json.dumps with options (sort_keys, ensure_ascii, default, separators), and
json.dumps given any option builds a new JSONEncoder on every call: about half the cost of encoding
a profile body. This provider keeps one encoder per set of options and hands every other call to Flask.
"""

import json

from flask.json.provider import DefaultJSONProvider


class CachedEncoderJSONProvider(DefaultJSONProvider):
    """DefaultJSONProvider whose plain and compact dumps reuse an encoder (same options, same output)."""

    def __init__(self, app):
        super().__init__(app)
        self._encoders: dict[tuple, json.JSONEncoder] = {}

    def dumps(self, obj, **kwargs) -> str:
        """The JSON text of `obj`, as DefaultJSONProvider.dumps writes it."""
        if kwargs and kwargs.keys() != {"separators"}:
            return super().dumps(obj, **kwargs)
        separators = kwargs.get("separators")
        options = (self.default, self.ensure_ascii, self.sort_keys, separators)
        encoder = self._encoders.get(options)
        if encoder is None:
            encoder = self._encoders.setdefault(
                options,
                json.JSONEncoder(
                    default=self.default,
                    ensure_ascii=self.ensure_ascii,
                    sort_keys=self.sort_keys,
                    separators=separators,
                ),
            )
        return encoder.encode(obj)
