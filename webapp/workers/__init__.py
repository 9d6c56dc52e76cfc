"""Background processes beside the web workers: the mailer (``python -m
webapp.workers.mailer``)."""
