"""The serve extra uses deploy's (it serves exported models): the shared export and the digits as PNG files."""

from tests.extras.deploy.conftest import digit_files, digits_export  # noqa: F401  (fixtures)
