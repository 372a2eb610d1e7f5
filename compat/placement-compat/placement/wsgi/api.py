"""``placement.wsgi.api:application``: what uWSGI and gunicorn load."""

from allotment.cmd.placement_wsgi import init_application

application = init_application()
