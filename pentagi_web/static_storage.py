"""Static files storage: hashed, compressed names after `collectstatic`, plain names before it.

`CompressedManifestStaticFilesStorage` alone turns every `{% static %}` into an error until collectstatic has
run, which would break `manage.py run` from a fresh clone and every test. Here a name missing from the manifest
keeps its plain URL, which WhiteNoise serves from the finders (short cache), so the product works either way
and gets far-future caching as soon as collectstatic has run.
"""
from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage

__all__ = ["ManifestWhenCollectedStorage"]


class ManifestWhenCollectedStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:  # not collected yet: the file is not in STATIC_ROOT to hash
            return name
