"""Finding kinds of the ib domain. See taxonomy/__init__.py for the row format."""

from .table import kind  # noqa: F401

KINDS = {
}
