"""PyBullet implementation of the backend contract."""

from .backend import PyBulletBackend
from .camera import PyBulletCamera, view_matrix

__all__ = ["PyBulletBackend", "PyBulletCamera", "view_matrix"]
