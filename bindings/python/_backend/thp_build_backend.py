# SPDX-License-Identifier: LGPL-2.1-or-later
"""PEP 517 build backend of the thp binding: setuptools, run on a copy.

setuptools writes build/ and thp.egg-info/ into the directory it builds,
which for `pip install bindings/python` is the source tree.  These hooks
run setuptools.build_meta on a temporary copy of the tree instead, so a
build leaves the tree as it was.  Only editable installs, which must
point at the tree itself, build in place (and write thp.egg-info there).
"""

import contextlib
import os
import shutil
import tempfile
from typing import Any, Dict, Iterator, List, Optional

from setuptools import build_meta as _setuptools

_Settings = Optional[Dict[str, Any]]


@contextlib.contextmanager
def _in_copy() -> Iterator[None]:
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="thp-build-") as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(here, copy, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache"))
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(here)


def _abs(path: Optional[str]) -> Optional[str]:
    return os.path.abspath(path) if path is not None else None


def get_requires_for_build_wheel(config_settings: _Settings = None) -> List[str]:
    with _in_copy():
        return list(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings: _Settings = None) -> List[str]:
    with _in_copy():
        return list(_setuptools.get_requires_for_build_sdist(config_settings))


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: _Settings = None) -> str:
    out = os.path.abspath(metadata_directory)
    with _in_copy():
        return str(_setuptools.prepare_metadata_for_build_wheel(out, config_settings))


def build_wheel(wheel_directory: str, config_settings: _Settings = None,
                metadata_directory: Optional[str] = None) -> str:
    out = os.path.abspath(wheel_directory)
    meta = _abs(metadata_directory)
    with _in_copy():
        return str(_setuptools.build_wheel(out, config_settings, meta))


def build_sdist(sdist_directory: str, config_settings: _Settings = None) -> str:
    out = os.path.abspath(sdist_directory)
    with _in_copy():
        return str(_setuptools.build_sdist(out, config_settings))


# Editable installs: in place, as setuptools does it.
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_editable = _setuptools.build_editable
