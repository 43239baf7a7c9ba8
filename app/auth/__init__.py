"""The backend-for-frontend under /auth: sign-in with PKCE, session tokens in Redis, sign-out."""
