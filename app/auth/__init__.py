"""Signing in under /auth: the routes, the sign-in flow (PKCE, callback, SPA exchange, sign-out) and
pending sign-ins. The session a sign-in starts is app.sessions'."""
