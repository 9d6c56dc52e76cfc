"""Infrastructure the domain may use that is not Redis: background loops."""
