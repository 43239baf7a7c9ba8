"""Browser sessions behind the cookie: the sealed token record, the refresh protocol, the session check,
your sessions, back-channel logout and the Flask-Session interface. Both front doors (/auth and
/api/v1) stand on it."""
