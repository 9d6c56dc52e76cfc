"""Web plumbing beside the views, no routes: WSGI middleware (security headers, trusted
proxies, request timing), the admin's session, device cookie and login limits, the
visitor's language, JSON in and out, links, safe local paths, gunicorn's configuration,
and the Prometheus collector."""
