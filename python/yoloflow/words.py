"""Keyword arguments as the words of yoloflow's command line (``imgsz=640``, ``amp=False``,
``classes=[0,2]``), so that Python calls and the ``yoloflow`` command read them with the same
checks, defaults and one-line refusals (docs/ultralytics-arguments.md)."""

import os

__all__ = ["word", "words"]


def _value(value):
    if isinstance(value, bool):
        return "True" if value else "False"
    if value is None:
        return "None"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        raise TypeError("a dict is no value of a yoloflow argument; give its entries as arguments")
    return str(value)


def word(key, value):
    """``key=value`` as the command line writes it."""
    return "%s=%s" % (key, _value(value))


def words(arguments):
    """Every ``key=value`` of a dict of keyword arguments, in their order."""
    return [word(k, v) for k, v in arguments.items()]
