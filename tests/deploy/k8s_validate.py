#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Kubernetes manifests checked offline against the API's own schema.

    k8s_validate.py FILE...        exit 1 and a line per error when one is invalid

The schema is the one Debian's python3-kubernetes (the Kubernetes API's
generated client) carries: every model's field names (attribute_map),
their types (openapi_types) and the fields its constructor refuses to
leave unset.  Each document's every field must be one its type has, of
the type the API says, with every required field present; apiVersion and
kind must be a pair the API serves.  No cluster is asked.
"""
import re
import sys

import yaml
from kubernetes.client import models

# The kinds a manifest here may hold, and their apiVersion.
KINDS = {
    "ConfigMap": "v1",
    "DaemonSet": "apps/v1",
    "Namespace": "v1",
    "Pod": "v1",
    "Service": "v1",
    "ServiceAccount": "v1",
}


def check_value(value, typ, path, errors):
    if typ == "object":  # IntOrString, free-form
        return
    if typ == "str":
        ok = isinstance(value, str)
    elif typ == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif typ == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif typ == "bool":
        ok = isinstance(value, bool)
    elif typ == "datetime":
        ok = isinstance(value, str)
    elif typ.startswith("list["):
        if not isinstance(value, list):
            errors.append("%s: expected a list, got %s" % (path, type(value).__name__))
            return
        for i, item in enumerate(value):
            check_value(item, typ[5:-1], "%s[%d]" % (path, i), errors)
        return
    elif typ.startswith("dict("):
        inner = re.match(r"dict\(str, (.*)\)$", typ).group(1)
        if not isinstance(value, dict):
            errors.append("%s: expected a map, got %s" % (path, type(value).__name__))
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append("%s: key %r is not a string" % (path, k))
            check_value(v, inner, "%s.%s" % (path, k), errors)
        return
    else:
        check_model(value, typ, path, errors)
        return
    if not ok:
        errors.append("%s: expected %s, got %r" % (path, typ, value))


def check_model(obj, cls_name, path, errors):
    cls = getattr(models, cls_name)
    if not isinstance(obj, dict):
        errors.append("%s: expected an object (%s), got %r" % (path, cls_name, obj))
        return
    by_json = {v: k for k, v in cls.attribute_map.items()}
    for key, value in obj.items():
        if key not in by_json:
            errors.append("%s: unknown field %r in %s" % (path, key, cls_name))
            continue
        check_value(value, cls.openapi_types[by_json[key]], "%s.%s" % (path, key), errors)
    # The generated constructor refuses None for each required field.
    try:
        cls(**{by_json[k]: v for k, v in obj.items() if k in by_json})
    except ValueError as e:
        errors.append("%s: %s: %s" % (path, cls_name, e))


def check_document(doc, where):
    errors = []
    if not isinstance(doc, dict):
        return ["%s: not an object" % where]
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if KINDS.get(kind) != version:
        return ["%s: apiVersion %r kind %r is not one of %s" % (where, version, kind, KINDS)]
    cls_name = version.split("/")[-1].capitalize() + kind
    check_model(doc, cls_name, "%s: %s" % (where, kind), errors)
    return errors


def check_text(text, where):
    """Errors of every document of a YAML text (an empty list: valid)."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        return ["%s: not YAML: %s" % (where, e)]
    if not docs:
        return ["%s: no document" % where]
    errors = []
    for i, doc in enumerate(docs):
        errors += check_document(doc, "%s#%d" % (where, i))
    return errors


def main(paths):
    errors = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            errors += check_text(f.read(), path)
    for e in errors:
        print("INVALID " + e)
    if not errors:
        print("valid: %s" % " ".join(paths))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
