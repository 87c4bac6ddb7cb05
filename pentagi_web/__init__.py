"""Django project package; importing it wires the Celery app (standard Celery-with-Django layout)."""
from pentagi_web.celery import app as celery_app

__all__ = ["celery_app"]
