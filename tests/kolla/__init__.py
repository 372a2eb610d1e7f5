"""allotment deployed by kolla-ansible's own files: uWSGI and Apache with
mod_wsgi behind haproxy with TLS (docs/deploying.md)."""
