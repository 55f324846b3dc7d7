import os

from django.core.wsgi import get_wsgi_application

from collab.tracing import start_unless_forking

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")
# Before the handler loads its middleware: tracing adds its own (collab/tracing.py).
start_unless_forking()

application = get_wsgi_application()
