"""Django's static file finders, with a path that leaves their directories found nowhere.

The development server (runserver, the tests' live server) serves /static/ through these finders;
Django's own raise SuspiciousFileOperation for `/static/..%2f..%2fsettings.py`, which that server
answers with a 500. Here such a path is simply not a static file: a 404, and nothing is read.
"""
from django.contrib.staticfiles import finders
from django.core.exceptions import SuspiciousFileOperation


class _Confined:
    def find(self, path, find_all=False, **kwargs):
        try:
            return super().find(path, find_all, **kwargs)
        except SuspiciousFileOperation:
            return []  # what Django's finders return when nothing matches


class FileSystemFinder(_Confined, finders.FileSystemFinder):
    pass


class AppDirectoriesFinder(_Confined, finders.AppDirectoriesFinder):
    pass
